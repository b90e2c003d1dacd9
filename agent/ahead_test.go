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
	// compileS, when set, is the compile time each passed verdict reports
	// (Triton's interpreter compiles nothing).
	compileS float64
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
	v, err := s.Session.Verify(ctx, c)
	if err == nil && v.Passed && s.compileS > 0 {
		v.TritonCompiles = &platform.TritonCompiles{Compiled: 1, Seconds: s.compileS}
	}
	return v, err
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
	as := &aheadSession{Session: ws, compileS: 1.0} // compiles worth a batch
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

// TestAheadOnlyWhereCompilesAreSlow: a round's batch runs only where the
// run's candidates took long enough to compile; without a measured compile
// (the interpreter, cache hits only) no batch runs.
func TestAheadOnlyWhereCompilesAreSlow(t *testing.T) {
	verdict := func(compiled int, s float64) store.Candidate {
		return store.Candidate{Verdict: &platform.Verdict{Passed: true, TritonCompiles: &platform.TritonCompiles{Compiled: compiled, Seconds: s}}}
	}
	all := []store.Candidate{verdict(1, 0.07), verdict(0, 0.01), verdict(1, 0.06), verdict(2, 0.9), {}}
	per, n := compileSeconds(all)
	if per != 0.07 || n != 3 {
		t.Fatalf("compileSeconds = %g over %d, want the median 0.07 over the 3 that compiled", per, n)
	}
	// The H200's KernelBench activations: 8 variants at 0.07 s each.
	if aheadWorth(8, per) {
		t.Error("a batch for 8 variants compiling in 0.07 s each: it costs more than it saves")
	}
	if !aheadWorth(8, 0.5) || !aheadWorth(2, 1.0) {
		t.Error("no batch where the compiles take 4 s or 2 s in all")
	}
	if per, n := compileSeconds([]store.Candidate{verdict(0, 0.02), {}}); n != 0 || aheadWorth(8, per) {
		t.Errorf("no compile measured: compileSeconds = %g over %d, and a batch ran", per, n)
	}
}
