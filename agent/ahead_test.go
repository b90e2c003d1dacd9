package agent

import (
	"context"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/worker"
)

// aheadSession records what the loop hands to CompileAhead and when, against
// the verifications, and passes both on to the worker session.
type aheadSession struct {
	*worker.Session
	mu       sync.Mutex
	verified []string   // candidate sources, in verification order
	batches  [][]string // each CompileAhead's sources
	before   []int      // verifications done when each batch came
}

func (s *aheadSession) Verify(ctx context.Context, c platform.Candidate) (platform.Verdict, error) {
	src, _ := os.ReadFile(c.Path)
	s.mu.Lock()
	s.verified = append(s.verified, string(src))
	s.mu.Unlock()
	return s.Session.Verify(ctx, c)
}

func (s *aheadSession) CompileAhead(ctx context.Context, cs []platform.Candidate) (platform.CompileReport, error) {
	var srcs []string
	for _, c := range cs {
		b, err := os.ReadFile(c.Path)
		if err != nil || string(b) != c.Source {
			return platform.CompileReport{}, os.ErrNotExist
		}
		srcs = append(srcs, c.Source)
	}
	s.mu.Lock()
	s.batches = append(s.batches, srcs)
	s.before = append(s.before, len(s.verified))
	s.mu.Unlock()
	return s.Session.CompileAhead(ctx, cs)
}

// TestCompileAheadBeforeTheRound: each tune round hands its new variants to
// the session's compiler once, before the first of them is verified, and
// every variant of the round is in that batch; round 0 (the input alone)
// hands nothing over.
func TestCompileAheadBeforeTheRound(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyTune)
	cfg.MaxRounds = 2
	cfg.StrategyConfig.MaxVariants = 2
	cfg.StrategyConfig.MaxNoImprovement = 2
	var calls atomic.Int32
	in := e.input(cfg, nil)
	in.Tuner = fakeTuner(t, &calls)
	ws, ok := e.sess.(*worker.Session)
	if !ok {
		t.Fatalf("the test session is a %T", e.sess)
	}
	as := &aheadSession{Session: ws}
	in.Session = as
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	all := mustCandidates(t, e.store, res.RunID)
	byRound := map[int][]string{}
	for _, c := range all {
		if c.Round > 0 {
			byRound[c.Round] = append(byRound[c.Round], c.Source)
		}
	}
	if len(as.batches) != len(byRound) || len(byRound) == 0 {
		t.Fatalf("%d batches for %d rounds with variants", len(as.batches), len(byRound))
	}
	for i, batch := range as.batches {
		r := i + 1
		want := byRound[r]
		slices.Sort(want)
		got := slices.Clone(batch)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("round %d: the batch held %d sources, the round verified %d others", r, len(got), len(want))
		}
		// Verified before the batch: the input and the earlier rounds' variants.
		done := 1
		for k := 1; k < r; k++ {
			done += len(byRound[k])
		}
		if as.before[i] != done {
			t.Errorf("round %d's batch came after %d verifications, want %d (before the round's first)", r, as.before[i], done)
		}
	}
	if _, ok := all[store.InputID]; !ok {
		t.Fatal("no input candidate")
	}
}
