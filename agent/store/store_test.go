package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// TestRoundTrip writes every kind of record, reads it back through each
// reader, closes the file, opens it again and reads it once more.
func TestRoundTrip(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/sub/dir/history.db"
	clk := newClock()
	s, err := Open(ctx, path, WithClock(clk.Now))
	check(t, err)

	run := must[Run](t)(s.CreateRun(ctx, Run{
		ID: "run-1", KernelDir: "/k/rmsnorm/", Problem: "rmsnorm", Strategy: "beam_search",
		Platform: "cuda", Device: "NVIDIA H200", ConfigYAML: "strategy: beam_search\nmax_rounds: 3\n",
	}))
	if run.KernelDir != "/k/rmsnorm" || run.InputID != DefaultInputID || run.Status != RunRunning || run.StartedAt.IsZero() {
		t.Fatalf("created run = %+v", run)
	}
	eager, compile := timingOf("eager", 7.5), timingOf("compile", 5.25)
	compile.Representative = false
	check(t, s.SetBaseline(ctx, run.ID, platform.TargetEager, *eager))
	check(t, s.SetBaseline(ctx, run.ID, platform.TargetCompile, *compile))

	check(t, s.StartRound(ctx, run.ID, 0))
	var want []Candidate
	add := func(c Candidate) {
		t.Helper()
		c.RunID = run.ID
		got := must[Candidate](t)(s.AddCandidate(ctx, c))
		if got.Status != StatusProposed || got.SourceHash != SourceHash(c.Source) || got.CreatedAt.IsZero() {
			t.Fatalf("added %+v", got)
		}
		want = append(want, got)
	}
	update := func(id string, u Update) {
		t.Helper()
		got := must[Candidate](t)(s.UpdateCandidate(ctx, run.ID, id, u))
		for i := range want {
			if want[i].ID == id {
				want[i] = got
			}
		}
	}
	add(Candidate{ID: "input", Round: 0, Source: kernelSource("input")})
	update("input", Update{Status: StatusVerified, Verdict: passVerdict()})
	update("input", Update{Status: StatusTimed, Timing: timingOf("input", 6.0)})
	update("input", Update{Status: StatusProfiled, Metrics: metricsOf(6.0), Roofline: rooflineOf()})
	state := json.RawMessage(`{"beam":["input"],"no_improvement":0}`)
	check(t, s.FinishRound(ctx, run.ID, 0, state))

	check(t, s.StartRound(ctx, run.ID, 1))
	add(Candidate{ID: "r1c0", Round: 1, ParentID: "input", Bottleneck: 1, Direction: "memory: fuse the two passes",
		Source: kernelSource("r1c0")})
	add(Candidate{ID: "r1c1", Round: 1, ParentID: "input", Bottleneck: 2, Direction: "latency: larger blocks",
		Source: kernelSource("r1c1")})
	add(Candidate{ID: "r1c1.1", Round: 1, ParentID: "input", Bottleneck: 2, RefineOf: "r1c1", RefineAttempt: 1,
		Source: kernelSource("r1c1.1")})
	update("r1c0", Update{Status: StatusVerified, Verdict: passVerdict()})
	update("r1c0", Update{Status: StatusTimed, Timing: timingOf("r1c0", 3.9)})
	update("r1c0", Update{Status: StatusProfiled, Metrics: metricsOf(3.9)})
	update("r1c1", Update{Status: StatusRejected, Verdict: failVerdict("allclose", "max abs err 0.5 > atol 1e-4 on draw 2 # of 3")})
	update("r1c1.1", Update{Status: StatusFailed, Error: "worker died: CUDA error: illegal memory access"})
	check(t, s.SetBest(ctx, run.ID, "r1c0"))

	calls := []LLMCall{
		{RunID: run.ID, Round: 1, Purpose: "diagnose", Model: "gpt-5-mini", PromptTokens: 1200, CompletionTokens: 300,
			CostUSD: 0.0125, Duration: 2 * time.Second, Fingerprint: "fp-1", At: time.Date(2026, 1, 29, 11, 0, 1, 0, time.UTC)},
		{RunID: run.ID, Round: 1, CandidateID: "r1c0", Purpose: "rewrite", Model: "gpt-5", PromptTokens: 3000,
			CompletionTokens: 2000, UsageEstimated: true, CostUSD: 0.05, Duration: 9 * time.Second, Fingerprint: "fp-2",
			At: time.Date(2026, 1, 29, 11, 0, 2, 0, time.UTC)},
		{RunID: run.ID, Round: NoRound, Purpose: "rewrite", Model: "gpt-5", Duration: time.Second,
			Error: "429 too many requests", At: time.Date(2026, 1, 29, 11, 0, 3, 5, time.UTC)},
	}
	for i := range calls {
		calls[i].ID = must[int64](t)(s.RecordLLMCall(ctx, calls[i]))
	}
	evID := must[int64](t)(s.AddEvent(ctx, Event{RunID: run.ID, Round: 1, Kind: "loop.note", Message: "plateau 1/3",
		Data: json.RawMessage(`{"plateau":1}`)}))
	check(t, s.FinishRound(ctx, run.ID, 1, nil))
	check(t, s.FinishRun(ctx, run.ID, RunFinished, "plateau: 3 rounds without improvement"))

	verify := func(s *Store) {
		t.Helper()
		d := must[*RunDetail](t)(s.GetRun(ctx, run.ID))
		wantRun := run
		wantRun.Status, wantRun.StopReason, wantRun.BestID = RunFinished, "plateau: 3 rounds without improvement", "r1c0"
		wantRun.FinishedAt = d.FinishedAt
		wantRun.Baselines = Baselines{Eager: eager, Compile: compile, Input: timingOf("input", 6.0)}
		if d.FinishedAt.IsZero() || !reflect.DeepEqual(d.Run, wantRun) {
			t.Errorf("run:\n got %+v\nwant %+v", d.Run, wantRun)
		}
		if len(d.Rounds) != 2 || !d.Rounds[0].Finished() || !d.Rounds[1].Finished() ||
			string(d.Rounds[0].State) != string(state) || d.Rounds[1].State != nil || d.Rounds[1].Index != 1 {
			t.Errorf("rounds = %+v", d.Rounds)
		}
		if !reflect.DeepEqual(d.Candidates, want) {
			t.Errorf("candidates:\n got %+v\nwant %+v", d.Candidates, want)
		}
		// The results are what was written, field for field.
		c := d.Candidates[1]
		if !reflect.DeepEqual(c.Verdict, passVerdict()) || !reflect.DeepEqual(c.Timing, timingOf("r1c0", 3.9)) ||
			!reflect.DeepEqual(c.Metrics, metricsOf(3.9)) || c.Roofline != nil {
			t.Errorf("r1c0 results = %+v", c)
		}
		if in := d.Candidates[0]; !reflect.DeepEqual(in.Roofline, rooflineOf()) {
			t.Errorf("input roofline = %+v", in.Roofline)
		}
		if c := d.Candidates[3]; c.RefineOf != "r1c1" || c.RefineAttempt != 1 || c.Bottleneck != 2 || c.Error == "" {
			t.Errorf("refinement = %+v", c)
		}

		gotCalls := must[[]LLMCall](t)(s.LLMCalls(ctx, run.ID))
		if !reflect.DeepEqual(gotCalls, calls) {
			t.Errorf("llm calls:\n got %+v\nwant %+v", gotCalls, calls)
		}
		u := must[Usage](t)(s.LLMUsage(ctx, run.ID))
		wantUsage := Usage{
			Totals: Totals{Calls: 3, Failed: 1, PromptTokens: 4200, CompletionTokens: 2300, EstimatedCalls: 1, CostUSD: 0.0625,
				Duration: 12 * time.Second},
			ByPurpose: map[string]Totals{
				"diagnose": {Calls: 1, PromptTokens: 1200, CompletionTokens: 300, CostUSD: 0.0125, Duration: 2 * time.Second},
				"rewrite": {Calls: 2, Failed: 1, PromptTokens: 3000, CompletionTokens: 2000, EstimatedCalls: 1, CostUSD: 0.05,
					Duration: 10 * time.Second},
			},
			ByModel: map[string]Totals{
				"gpt-5-mini": {Calls: 1, PromptTokens: 1200, CompletionTokens: 300, CostUSD: 0.0125, Duration: 2 * time.Second},
				"gpt-5": {Calls: 2, Failed: 1, PromptTokens: 3000, CompletionTokens: 2000, EstimatedCalls: 1, CostUSD: 0.05,
					Duration: 10 * time.Second},
			},
		}
		if math.Abs(u.CostUSD-wantUsage.CostUSD) > 1e-12 {
			t.Errorf("cost = %v", u.CostUSD)
		}
		u.CostUSD = wantUsage.CostUSD
		if !reflect.DeepEqual(u, wantUsage) {
			t.Errorf("usage:\n got %+v\nwant %+v", u, wantUsage)
		}

		evs := must[[]Event](t)(s.Events(ctx, run.ID, 0, 0))
		var kinds []string
		var note Event
		for _, e := range evs {
			kinds = append(kinds, e.Kind)
			if e.ID == evID {
				note = e
			}
		}
		wantKinds := []string{"run.created", "baseline.eager", "baseline.compile", "round.started",
			"candidate.proposed", "candidate.verified", "candidate.timed", "candidate.profiled", "round.finished",
			"round.started", "candidate.proposed", "candidate.proposed", "candidate.proposed",
			"candidate.verified", "candidate.timed", "candidate.profiled", "candidate.rejected", "candidate.failed",
			"run.best", "loop.note", "round.finished", "run.finished"}
		if !reflect.DeepEqual(kinds, wantKinds) {
			t.Errorf("event kinds:\n got %q\nwant %q", kinds, wantKinds)
		}
		if note.Round != 1 || note.Message != "plateau 1/3" || string(note.Data) != `{"plateau":1}` || note.At.IsZero() {
			t.Errorf("note = %+v", note)
		}
		if tail := must[[]Event](t)(s.Events(ctx, run.ID, evs[len(evs)-3].ID, 2)); len(tail) != 2 || tail[0].Kind != "round.finished" {
			t.Errorf("events after %d = %+v", evs[len(evs)-3].ID, tail)
		}
		best := must[Candidate](t)(s.BestCandidate(ctx, run.ID))
		if best.ID != "r1c0" {
			t.Errorf("best = %s", best.ID)
		}
		runs := must[[]Run](t)(s.ListRuns(ctx, RunFilter{}))
		if len(runs) != 1 || !reflect.DeepEqual(runs[0], d.Run) {
			t.Errorf("list = %+v", runs)
		}
	}
	verify(s)
	check(t, s.Close())
	check(t, s.Close()) // idempotent

	s2, err := Open(ctx, path, WithClock(clk.Now))
	check(t, err)
	defer s2.Close()
	verify(s2)
}

func TestNonFiniteNumbersStoredAsStandardJSON(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	newRun(t, s, "r")
	v := passVerdict()
	v.MaxAbsErr = math.NaN()
	check(t, s.SetBaseline(ctx, "r", platform.TargetEager, platform.Timing{MedianMS: 2, CV: math.Inf(1)}))
	must[Candidate](t)(s.UpdateCandidate(ctx, "r", "input", Update{Status: StatusVerified, Verdict: v}))
	tm := timingOf("input", 1)
	tm.TimesMS[1] = math.Inf(-1)
	c := must[Candidate](t)(s.UpdateCandidate(ctx, "r", "input", Update{Status: StatusTimed, Timing: tm}))
	if c.Verdict.MaxAbsErr != 0 || c.Timing.TimesMS[1] != 0 || c.Timing.TimesMS[0] != 0.98 || !c.Verdict.Passed {
		t.Errorf("candidate = %+v %+v", c.Verdict, c.Timing)
	}
	if !math.IsNaN(v.MaxAbsErr) || !math.IsInf(tm.TimesMS[1], -1) {
		t.Error("the caller's values were changed")
	}
	r := must[*RunDetail](t)(s.GetRun(ctx, "r"))
	if r.Baselines.Eager.CV != 0 || r.Baselines.Eager.MedianMS != 2 {
		t.Errorf("eager = %+v", r.Baselines.Eager)
	}
}

// TestTransitions runs every update from every status.
func TestTransitions(t *testing.T) {
	ctx := context.Background()
	updates := map[Status]Update{
		StatusVerified: {Status: StatusVerified, Verdict: passVerdict()},
		StatusRejected: {Status: StatusRejected, Verdict: failVerdict("nan", "output has NaN")},
		StatusTimed:    {Status: StatusTimed, Timing: timingOf("x", 1)},
		StatusProfiled: {Status: StatusProfiled, Metrics: metricsOf(1), Roofline: rooflineOf()},
		StatusFailed:   {Status: StatusFailed, Error: "timeout after 60s"},
	}
	// path walks a fresh candidate to a status.
	path := map[Status][]Status{
		StatusProposed: nil,
		StatusVerified: {StatusVerified},
		StatusRejected: {StatusRejected},
		StatusTimed:    {StatusVerified, StatusTimed},
		StatusProfiled: {StatusVerified, StatusTimed, StatusProfiled},
		StatusFailed:   {StatusFailed},
	}
	s := openTest(t)
	newRun(t, s, "r")
	n := 0
	for _, from := range Statuses {
		for _, to := range Statuses[1:] {
			t.Run(string(from)+"_to_"+string(to), func(t *testing.T) {
				n++
				id := "c" + string(rune('a'+n/26)) + string(rune('a'+n%26))
				must[Candidate](t)(s.AddCandidate(ctx, Candidate{RunID: "r", ID: id, Source: id}))
				for _, st := range path[from] {
					must[Candidate](t)(s.UpdateCandidate(ctx, "r", id, updates[st]))
				}
				before := must[Candidate](t)(s.Candidate(ctx, "r", id))
				got, err := s.UpdateCandidate(ctx, "r", id, updates[to])
				if allowed(from, to) {
					if err != nil || got.Status != to {
						t.Fatalf("%s → %s: %v, status %s", from, to, err, got.Status)
					}
					if before.Timing != nil && !reflect.DeepEqual(got.Timing, before.Timing) {
						t.Errorf("timing changed: %+v", got.Timing)
					}
					return
				}
				if !errors.Is(err, ErrTransition) {
					t.Fatalf("%s → %s: err = %v, want ErrTransition", from, to, err)
				}
				if after := must[Candidate](t)(s.Candidate(ctx, "r", id)); !reflect.DeepEqual(after, before) {
					t.Errorf("refused update changed the row:\n%+v\n%+v", after, before)
				}
			})
		}
	}
	for _, want := range []struct{ from, to Status }{
		{StatusProposed, StatusVerified}, {StatusVerified, StatusTimed}, {StatusTimed, StatusProfiled},
		{StatusProfiled, StatusRejected}, {StatusTimed, StatusFailed},
	} {
		if !allowed(want.from, want.to) {
			t.Errorf("%s → %s should be allowed", want.from, want.to)
		}
	}
	if allowed(StatusTimed, StatusTimed) || allowed(StatusRejected, StatusVerified) || allowed(StatusFailed, StatusVerified) {
		t.Error("a candidate may be timed twice or revived")
	}
}

func TestUpdateArguments(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	newRun(t, s, "r")
	for _, tc := range []struct {
		name string
		u    Update
	}{
		{"verified without verdict", Update{Status: StatusVerified}},
		{"verified with failing verdict", Update{Status: StatusVerified, Verdict: failVerdict("x", "y")}},
		{"rejected with passing verdict", Update{Status: StatusRejected, Verdict: passVerdict()}},
		{"verified with a timing too", Update{Status: StatusVerified, Verdict: passVerdict(), Timing: timingOf("x", 1)}},
		{"timed without timing", Update{Status: StatusTimed}},
		{"profiled without metrics", Update{Status: StatusProfiled, Roofline: rooflineOf()}},
		{"roofline without metrics", Update{Status: StatusTimed, Timing: timingOf("x", 1), Roofline: rooflineOf()}},
		{"failed without error", Update{Status: StatusFailed}},
		{"back to proposed", Update{Status: StatusProposed}},
		{"unknown status", Update{Status: "done"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.UpdateCandidate(ctx, "r", "input", tc.u); !errors.Is(err, ErrInvalid) {
				t.Errorf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	newRun(t, s, "r")
	tests := []struct {
		name string
		do   func() error
		want error
	}{
		{"duplicate run", func() error { _, err := s.CreateRun(ctx, Run{ID: "r", KernelDir: "/k"}); return err }, ErrDuplicate},
		{"run without kernel dir", func() error { _, err := s.CreateRun(ctx, Run{ID: "x"}); return err }, ErrInvalid},
		{"duplicate candidate", func() error {
			_, err := s.AddCandidate(ctx, Candidate{RunID: "r", ID: "input", Source: "x"})
			return err
		}, ErrDuplicate},
		{"candidate of unknown run", func() error { _, err := s.AddCandidate(ctx, Candidate{RunID: "nope", ID: "a"}); return err }, ErrNotFound},
		{"candidate in unknown round", func() error {
			_, err := s.AddCandidate(ctx, Candidate{RunID: "r", ID: "a", Round: 4})
			return err
		}, ErrNotFound},
		{"unknown parent", func() error {
			_, err := s.AddCandidate(ctx, Candidate{RunID: "r", ID: "a", ParentID: "ghost"})
			return err
		}, ErrNotFound},
		{"unknown refined candidate", func() error {
			_, err := s.AddCandidate(ctx, Candidate{RunID: "r", ID: "a", RefineOf: "ghost"})
			return err
		}, ErrNotFound},
		{"own parent", func() error { _, err := s.AddCandidate(ctx, Candidate{RunID: "r", ID: "a", ParentID: "a"}); return err }, ErrInvalid},
		{"update unknown candidate", func() error {
			_, err := s.UpdateCandidate(ctx, "r", "ghost", Update{Status: StatusFailed, Error: "x"})
			return err
		}, ErrNotFound},
		{"start round while one is open", func() error { return s.StartRound(ctx, "r", 1) }, ErrTransition},
		{"start an existing round", func() error { return s.StartRound(ctx, "r", 0) }, ErrDuplicate},
		{"finish a round with unsettled candidates", func() error { return s.FinishRound(ctx, "r", 0, nil) }, ErrTransition},
		{"finish an unknown round", func() error { return s.FinishRound(ctx, "r", 7, nil) }, ErrNotFound},
		{"round state not JSON", func() error { return s.FinishRound(ctx, "r", 0, json.RawMessage("{")) }, ErrInvalid},
		{"baseline of a kernel", func() error {
			return s.SetBaseline(ctx, "r", platform.TargetKernel, platform.Timing{})
		}, ErrInvalid},
		{"best not measured", func() error { return s.SetBest(ctx, "r", "input") }, ErrTransition},
		{"best unknown", func() error { return s.SetBest(ctx, "r", "ghost") }, ErrNotFound},
		{"no best yet", func() error { _, err := s.BestCandidate(ctx, "r"); return err }, ErrNotFound},
		{"unknown run", func() error { _, err := s.GetRun(ctx, "ghost"); return err }, ErrNotFound},
		{"resume unknown run", func() error { _, err := s.ResumeState(ctx, "ghost"); return err }, ErrNotFound},
		{"finish run as running", func() error { return s.FinishRun(ctx, "r", RunRunning, "") }, ErrInvalid},
		{"llm call in unknown round", func() error {
			_, err := s.RecordLLMCall(ctx, LLMCall{RunID: "r", Round: 9})
			return err
		}, ErrNotFound},
		{"llm call of unknown run", func() error { _, err := s.RecordLLMCall(ctx, LLMCall{RunID: "x", Round: NoRound}); return err }, ErrNotFound},
		{"event without kind", func() error { _, err := s.AddEvent(ctx, Event{RunID: "r"}); return err }, ErrInvalid},
		{"event data not JSON", func() error {
			_, err := s.AddEvent(ctx, Event{RunID: "r", Kind: "k", Data: json.RawMessage("nope")})
			return err
		}, ErrInvalid},
		{"no twin", func() error { _, err := s.CandidateByHash(ctx, "r", SourceHash("other")); return err }, ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}

	// Once settled, the round closes; then nothing is added to it.
	must[Candidate](t)(s.UpdateCandidate(ctx, "r", "input", Update{Status: StatusRejected, Verdict: failVerdict("static", "no @triton.jit")}))
	check(t, s.FinishRound(ctx, "r", 0, nil))
	if err := s.FinishRound(ctx, "r", 0, nil); !errors.Is(err, ErrTransition) {
		t.Errorf("finish twice: %v", err)
	}
	if _, err := s.AddCandidate(ctx, Candidate{RunID: "r", ID: "late", Round: 0}); !errors.Is(err, ErrTransition) {
		t.Errorf("add to finished round: %v", err)
	}
	if err := s.StartRound(ctx, "r", 2); !errors.Is(err, ErrInvalid) {
		t.Errorf("skip a round: %v", err)
	}
	check(t, s.SetBaseline(ctx, "r", platform.TargetEager, *timingOf("eager", 1)))
	if err := s.SetBaseline(ctx, "r", platform.TargetEager, *timingOf("eager", 2)); !errors.Is(err, ErrTransition) {
		t.Errorf("baseline twice: %v", err)
	}

	// A finished run takes no more writes and cannot be reopened; an
	// interrupted one can.
	check(t, s.FinishRun(ctx, "r", RunInterrupted, "SIGINT"))
	if err := s.StartRound(ctx, "r", 1); !errors.Is(err, ErrTransition) {
		t.Errorf("write to an interrupted run: %v", err)
	}
	if err := s.FinishRun(ctx, "r", RunFinished, ""); !errors.Is(err, ErrTransition) {
		t.Errorf("finish twice: %v", err)
	}
	check(t, s.ReopenRun(ctx, "r"))
	check(t, s.StartRound(ctx, "r", 1))
	check(t, s.FinishRun(ctx, "r", RunFinished, "max rounds"))
	if err := s.ReopenRun(ctx, "r"); !errors.Is(err, ErrTransition) {
		t.Errorf("reopen finished: %v", err)
	}
	// Logging still works on a finished run.
	must[int64](t)(s.RecordLLMCall(ctx, LLMCall{RunID: "r", Round: NoRound, Purpose: "report"}))
	if r := must[*RunDetail](t)(s.GetRun(ctx, "r")); r.Resumes != 1 || r.StopReason != "max rounds" {
		t.Errorf("run = %+v", r.Run)
	}
}

func TestListRuns(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	for _, r := range []Run{
		{ID: "a", KernelDir: "/k/rmsnorm"},
		{ID: "b", KernelDir: "/k/softmax"},
		{ID: "c", KernelDir: "/k/rmsnorm/."},
		{ID: "d", KernelDir: "/k/rmsnorm", StartedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		must[Run](t)(s.CreateRun(ctx, r))
	}
	check(t, s.FinishRun(ctx, "c", RunFailed, "worker crashed"))
	generated := must[Run](t)(s.CreateRun(ctx, Run{KernelDir: "/k/x"}))
	if len(generated.ID) != len("20260129-100000-abcdef") {
		t.Errorf("generated id %q", generated.ID)
	}
	for _, tc := range []struct {
		name string
		f    RunFilter
		want []string
	}{
		{"all newest first", RunFilter{}, []string{generated.ID, "c", "b", "a", "d"}},
		{"by kernel dir", RunFilter{KernelDir: "/k/rmsnorm/"}, []string{"c", "a", "d"}},
		{"by status", RunFilter{Status: RunFailed}, []string{"c"}},
		{"limit", RunFilter{KernelDir: "/k/rmsnorm", Limit: 2}, []string{"c", "a"}},
		{"none", RunFilter{KernelDir: "/k/none"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range must[[]Run](t)(s.ListRuns(ctx, tc.f)) {
				got = append(got, r.ID)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCandidatesFilterBestAndTwins(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	newRun(t, s, "r")
	newRun(t, s, "other") // same candidate ids in another run do not collide
	walk := func(id string, median float64) {
		must[Candidate](t)(s.UpdateCandidate(ctx, "r", id, Update{Status: StatusVerified, Verdict: passVerdict()}))
		must[Candidate](t)(s.UpdateCandidate(ctx, "r", id, Update{Status: StatusTimed, Timing: timingOf(id, median)}))
	}
	walk("input", 5)
	check(t, s.FinishRound(ctx, "r", 0, nil))
	check(t, s.StartRound(ctx, "r", 1))
	twin := "# a comment\n" + kernelSource("input") + "\n\n"
	for _, c := range []Candidate{
		{ID: "r1c0", Source: kernelSource("r1c0")},
		{ID: "r1c1", Source: kernelSource("r1c1")},
		{ID: "r1c2", Source: twin},
	} {
		c.RunID, c.Round, c.ParentID = "r", 1, "input"
		must[Candidate](t)(s.AddCandidate(ctx, c))
	}
	walk("r1c0", 4)
	walk("r1c1", 3)
	must[Candidate](t)(s.UpdateCandidate(ctx, "r", "r1c1", Update{Status: StatusRejected,
		Verdict: failVerdict("physical_limit", "faster than the roofline floor")}))

	for _, tc := range []struct {
		name string
		f    CandidateFilter
		want []string
	}{
		{"all", CandidateFilter{}, []string{"input", "r1c0", "r1c1", "r1c2"}},
		{"round 1", CandidateFilter{Rounds: []int{1}}, []string{"r1c0", "r1c1", "r1c2"}},
		{"timed", CandidateFilter{Statuses: []Status{StatusTimed}}, []string{"input", "r1c0"}},
		{"timed or proposed in round 1", CandidateFilter{Statuses: []Status{StatusTimed, StatusProposed}, Rounds: []int{1}}, []string{"r1c0", "r1c2"}},
		{"rounds 0 and 1 rejected", CandidateFilter{Statuses: []Status{StatusRejected}, Rounds: []int{0, 1}}, []string{"r1c1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(must[[]Candidate](t)(s.Candidates(ctx, "r", tc.f))); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}

	// The fastest measured candidate is the best until the loop names one;
	// the rejected r1c1 (3 ms) is not eligible.
	if b := must[Candidate](t)(s.BestCandidate(ctx, "r")); b.ID != "r1c0" {
		t.Errorf("best = %s", b.ID)
	}
	check(t, s.SetBest(ctx, "r", "input"))
	if b := must[Candidate](t)(s.BestCandidate(ctx, "r")); b.ID != "input" {
		t.Errorf("best = %s", b.ID)
	}
	// r1c2 differs from the input only by a comment and blank lines.
	if c := must[Candidate](t)(s.CandidateByHash(ctx, "r", SourceHash(twin))); c.ID != "input" {
		t.Errorf("twin of %s", c.ID)
	}
	if _, err := s.Candidates(ctx, "ghost", CandidateFilter{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown run: %v", err)
	}
}

// TestRetime: a screening timing is replaced by one of another budget; a
// full timing, or one of the same budget, never is.
func TestRetime(t *testing.T) {
	ctx := context.Background()
	screen := func(budget string) *platform.Timing {
		tm := timingOf("x", 1)
		tm.Budget = budget
		return tm
	}
	tests := []struct {
		name      string
		from, to  *platform.Timing
		wantError bool
	}{
		{name: "screen to full", from: screen("screen 11.1%"), to: screen("")},
		{name: "screen to longer screen", from: screen("screen 11.1%"), to: screen("screen 33.3%")},
		{name: "same budget", from: screen("screen 11.1%"), to: screen("screen 11.1%"), wantError: true},
		{name: "full to screen", from: screen(""), to: screen("screen 11.1%"), wantError: true},
		{name: "full to full", from: screen(""), to: screen(""), wantError: true},
	}
	s := openTest(t)
	newRun(t, s, "r")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := fmt.Sprintf("c%d", i)
			must[Candidate](t)(s.AddCandidate(ctx, Candidate{RunID: "r", ID: id, Source: id}))
			must[Candidate](t)(s.UpdateCandidate(ctx, "r", id, Update{Status: StatusVerified, Verdict: passVerdict()}))
			must[Candidate](t)(s.UpdateCandidate(ctx, "r", id, Update{Status: StatusTimed, Timing: tt.from}))
			must[Candidate](t)(s.UpdateCandidate(ctx, "r", id, Update{Status: StatusProfiled, Metrics: metricsOf(1), Roofline: rooflineOf()}))
			got, err := s.UpdateCandidate(ctx, "r", id, Update{Status: StatusTimed, Timing: tt.to})
			if tt.wantError {
				if !errors.Is(err, ErrTransition) {
					t.Fatalf("err = %v, want ErrTransition", err)
				}
				return
			}
			if err != nil || got.Status != StatusTimed || got.Timing.Budget != tt.to.Budget {
				t.Fatalf("retime: %v, %s, timing %+v", err, got.Status, got.Timing)
			}
		})
	}
}
