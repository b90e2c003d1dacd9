package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// busyGuard is the handles' busy timeout in TestConcurrentWritersAndReader.
// The loop's writers keep its handle's lock nearly all the time, and a
// write of the other handle waits for a gap between two of theirs: on a
// loaded machine (under -race, a write takes a tenth of a second there)
// longer than DefaultBusyTimeout. The test is about consistency, not about
// how long a write waits, so the timeout is only a guard against a hang.
const busyGuard = 10 * time.Minute

// TestConcurrentWritersAndReader has one handle (the loop) evaluate
// candidates from several goroutines while a second handle on the same file
// (another process, e.g. `kagent runs show`) both writes and reads. Run it
// with -race.
func TestConcurrentWritersAndReader(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	loop, err := Open(ctx, path, WithBusyTimeout(busyGuard))
	check(t, err)
	defer loop.Close()
	viewer, err := Open(ctx, path, WithBusyTimeout(busyGuard))
	check(t, err)
	defer viewer.Close()

	newRun(t, loop, "r")
	must[Candidate](t)(loop.UpdateCandidate(ctx, "r", "input", Update{Status: StatusRejected, Verdict: failVerdict("x", "y")}))
	check(t, loop.FinishRound(ctx, "r", 0, nil))
	check(t, loop.StartRound(ctx, "r", 1))

	const workers, perWorker, viewerCalls = 6, 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	fail := func(err error) {
		select {
		case errs <- err:
		default:
		}
	}
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perWorker {
				id := fmt.Sprintf("w%dc%d", w, i)
				if _, err := loop.RecordLLMCall(ctx, LLMCall{RunID: "r", Round: 1, CandidateID: id, Purpose: "rewrite",
					PromptTokens: 100, CompletionTokens: 10, CostUSD: 0.001}); err != nil {
					fail(err)
					return
				}
				if _, err := loop.AddCandidate(ctx, Candidate{RunID: "r", ID: id, Round: 1, ParentID: "input",
					Source: kernelSource(id)}); err != nil {
					fail(err)
					return
				}
				for _, u := range []Update{
					{Status: StatusVerified, Verdict: passVerdict()},
					{Status: StatusTimed, Timing: timingOf(id, 1+float64(w*perWorker+i)/100)},
					{Status: StatusProfiled, Metrics: metricsOf(1), Roofline: rooflineOf()},
				} {
					if _, err := loop.UpdateCandidate(ctx, "r", id, u); err != nil {
						fail(err)
						return
					}
				}
			}
		}()
	}
	// The other handle writes too (a second process logging calls).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range viewerCalls {
			if _, err := viewer.RecordLLMCall(ctx, LLMCall{RunID: "r", Round: NoRound, Purpose: "report",
				PromptTokens: i}); err != nil {
				fail(err)
				return
			}
		}
	}()

	// Readers on both handles see consistent snapshots that only grow.
	var done atomic.Bool
	var readers sync.WaitGroup
	var reads atomic.Int64
	for _, s := range []*Store{viewer, loop} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			lastProfiled, lastEvent := 0, int64(0)
			for !done.Load() {
				d, err := s.GetRun(ctx, "r")
				if err != nil {
					fail(err)
					return
				}
				profiled := 0
				for _, c := range d.Candidates {
					if (c.Status == StatusTimed || c.Status == StatusProfiled) && c.Timing == nil ||
						c.Status == StatusProfiled && (c.Metrics == nil || c.Roofline == nil) {
						fail(fmt.Errorf("torn candidate %+v", c))
						return
					}
					if c.Status == StatusProfiled {
						profiled++
					}
				}
				if profiled < lastProfiled {
					fail(fmt.Errorf("profiled went from %d to %d", lastProfiled, profiled))
					return
				}
				lastProfiled = profiled
				evs, err := s.Events(ctx, "r", lastEvent, 0)
				if err != nil {
					fail(err)
					return
				}
				if len(evs) > 0 {
					lastEvent = evs[len(evs)-1].ID
				}
				if _, err := s.LLMUsage(ctx, "r"); err != nil {
					fail(err)
					return
				}
				if _, err := s.ListRuns(ctx, RunFilter{KernelDir: "/k/rmsnorm"}); err != nil {
					fail(err)
					return
				}
				reads.Add(1)
			}
		}()
	}
	wg.Wait()
	done.Store(true)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	d := must[*RunDetail](t)(viewer.GetRun(ctx, "r"))
	got := must[[]Candidate](t)(viewer.Candidates(ctx, "r", CandidateFilter{Statuses: []Status{StatusProfiled}}))
	if len(got) != workers*perWorker || len(d.Candidates) != workers*perWorker+1 {
		t.Errorf("%d profiled of %d candidates, want %d", len(got), len(d.Candidates), workers*perWorker)
	}
	u := must[Usage](t)(loop.LLMUsage(ctx, "r"))
	if u.Calls != workers*perWorker+viewerCalls || u.ByPurpose["rewrite"].PromptTokens != 100*workers*perWorker {
		t.Errorf("usage = %+v", u)
	}
	if best := must[Candidate](t)(viewer.BestCandidate(ctx, "r")); best.ID != "w0c0" {
		t.Errorf("best = %s", best.ID)
	}
	t.Logf("%d snapshot reads during %d writes", reads.Load(), workers*perWorker*5+viewerCalls)
}
