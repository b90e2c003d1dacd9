package agent

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/noop"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/roofline"
	"github.com/kagent-kernels/kagent/search"
)

// fakeTuner proposes the test kernels as "knob variants".
func fakeTuner(t testing.TB, calls *atomic.Int32) search.Tuner {
	fast, slow, again := candidateSource(t, "fast.py"), candidateSource(t, "slow.py"), candidateSource(t, "fast_again.py")
	return search.TunerFunc(func(_ context.Context, source string, max int) ([]search.Variant, error) {
		calls.Add(1)
		vs := []search.Variant{{Label: "ROWS=1", Source: slow}, {Label: "FUSED=1", Source: fast}}
		if store.SourceHash(source) == store.SourceHash(fast) {
			vs = []search.Variant{{Label: "FUSED=2", Source: again}, {Label: "ROWS=1", Source: slow}}
		}
		if len(vs) > max {
			vs = vs[:max]
		}
		return vs, nil
	})
}

// TestTuneWithoutLLM: with no LLM configured, a greedy config runs the tune
// strategy, which evaluates knob variants and keeps the faster one.
func TestTuneWithoutLLM(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyGreedy)
	cfg.LLM.Model = "" // no LLM: the tuner proposes
	cfg.MaxRounds = 5
	cfg.StrategyConfig.MaxVariants = 2
	cfg.StrategyConfig.MaxNoImprovement = 1
	var calls atomic.Int32
	in := e.input(cfg, nil)
	in.Tuner = fakeTuner(t, &calls)
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	cs := mustCandidates(t, e.store, res.RunID)
	if !res.Improved || cs[res.Best.ID].Direction != "tune: FUSED=1" {
		t.Fatalf("best %s (%s), want the FUSED=1 variant", res.Best.ID, cs[res.Best.ID].Direction)
	}
	detail, _ := e.store.GetRun(context.Background(), res.RunID)
	if detail.Strategy != configs.StrategyTune {
		t.Errorf("run recorded strategy %s, want tune", detail.Strategy)
	}
	// From the new best, the tuner offers only a duplicate of it and the
	// slow variant already measured: nothing is evaluated twice, so no round 2.
	if res.Rounds != 1 || !strings.Contains(res.StopReason, "no untried variant") {
		t.Errorf("%d rounds, stop %q", res.Rounds, res.StopReason)
	}
	if res.Usage.Calls != 0 {
		t.Errorf("tune made %d llm calls", res.Usage.Calls)
	}
	// Variants are compared by source only: none pays for a code fingerprint.
	for id, c := range cs {
		_, err := os.Stat(filepath.Join(res.RunDir, candidateFile(id, fingerprintFile)))
		if c.Round > 0 && err == nil {
			t.Errorf("variant %s (%s) was fingerprinted", id, c.Direction)
		}
	}
	if _, err := os.Stat(filepath.Join(e.dir, "optimized_kernel_tune.py")); err != nil {
		t.Errorf("optimized_kernel_tune.py: %v", err)
	}
}

// TestPolish: after an LLM search, tune rounds polish the best.
func TestPolish(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyGreedy)
	cfg.MaxRounds = 1
	cfg.StrategyConfig.PolishRounds = 2
	cfg.StrategyConfig.MaxVariants = 2
	f := newFakeLLM(t, cfg)
	script(t, f.srv, []string{diagnosis("SLOW")}, map[string][]llmtest.Reply{"SLOW": {pyReply(candidateSource(t, "slow.py"))}}, nil)
	var calls atomic.Int32
	in := e.input(cfg, f.client)
	in.Tuner = fakeTuner(t, &calls)
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	cs := mustCandidates(t, e.store, res.RunID)
	if !res.Improved || cs[res.Best.ID].Direction != "tune: FUSED=1" || cs[res.Best.ID].Round != 2 {
		t.Fatalf("best %s (%s), want the polish's FUSED=1 in round 2", res.Best.ID, cs[res.Best.ID].Direction)
	}
	if !strings.HasPrefix(res.StopReason, "max_rounds") || !strings.Contains(res.StopReason, "polish") {
		t.Errorf("stop reason %q", res.StopReason)
	}
}

func TestDryRun(t *testing.T) {
	py := python(t)
	task, err := kerneldir.Load(context.Background(), kernelDir(t), kerneldir.LoadOptions{Python: py, RequireKernel: true})
	if err != nil {
		t.Fatal(err)
	}
	plat, _ := noop.New(platform.Config{})
	cfg := testConfig(configs.StrategyBeam)
	runDir := t.TempDir()

	res, err := DryRun(context.Background(), DryRunInput{Config: cfg, Task: task, Platform: plat, RunDir: runDir})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Prompts) != 4 || len(res.Replies) != 0 {
		t.Fatalf("without an llm: %d prompts, %d replies; want 4 and 0", len(res.Prompts), len(res.Replies))
	}
	b, _ := os.ReadFile(filepath.Join(runDir, "round001", "cand1", "optimize.prompt.md"))
	if !strings.Contains(string(b), "kernel_function(x, y)") || !strings.Contains(string(b), "NVIDIA CUDA guidance") {
		t.Errorf("optimize prompt lacks the kernel or the target's guidance:\n%s", b)
	}

	f := newFakeLLM(t, cfg)
	script(t, f.srv, []string{diagnosis("FAST", "SLOW")}, map[string][]llmtest.Reply{"FAST": {pyReply(candidateSource(t, "fast.py"))}}, nil)
	runDir = t.TempDir()
	res, err = DryRun(context.Background(), DryRunInput{Config: cfg, Task: task, Platform: plat, RunDir: runDir, LLM: f.client})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Replies) != 2 || res.Kernel == "" || f.srv.Count() != 2 {
		t.Fatalf("with an llm: %d replies, kernel %q, %d calls; want 2, a kernel, 2", len(res.Replies), res.Kernel, f.srv.Count())
	}
	if k, _ := os.ReadFile(filepath.Join(runDir, res.Kernel)); string(k) != candidateSource(t, "fast.py") {
		t.Errorf("dry-run kernel.py is not the rewrite")
	}
}

// oneTuneRound sets up a tune run of one round of two variants (the test
// kernels) on the kernel dir under the profile policy, on a counting
// session. Its tuner also lists a space, as the knob tuner does: the run
// then has a screener, which screens nothing held out here (the problem has
// no held-out shapes).
func oneTuneRound(t *testing.T, dir, policy string) (*env, RunInput, *countingSession) {
	t.Helper()
	e := newEnv(t, dir)
	cfg := testConfig(configs.StrategyTune)
	cfg.MaxRounds = 1
	cfg.StrategyConfig.MaxVariants = 2
	cfg.ProfileCandidates = policy
	var calls atomic.Int32
	in := e.input(cfg, nil)
	in.Tuner = spacer{fakeTuner(t, &calls)}
	cs := counting(t, e.sess)
	in.Session = cs
	return e, in, cs
}

// spacer is a tuner that also lists its variants as a space.
type spacer struct{ search.Tuner }

func (s spacer) Space(ctx context.Context, source string, max int) ([]search.Variant, error) {
	return s.Variants(ctx, source, max)
}

// countingSession records the candidates the profiler is asked to run on;
// the rest of the worker session (its acceptance gate, problem info) is as is.
type countingSession struct {
	*worker.Session
	mu       sync.Mutex
	profiled []string
	// rounds, when set, counts the rounds finished; at is its value at each
	// profile, in the order of profiled, and preparedAt at each
	// PrepareProfile call.
	rounds     func() int
	at         []int
	preparedAt []int
	// lastAt is the number of profiles done at each LastProfile call.
	lastAt []int
	// order lists the stages, gates and profiles asked, in order (and
	// unstages, with noteUnstage).
	order       []string
	noteUnstage bool
	// failGates fails every acceptance gate.
	failGates bool
}

func (s *countingSession) note(what string, c platform.Candidate) {
	s.mu.Lock()
	s.order = append(s.order, what+" "+c.ID)
	s.mu.Unlock()
}

func (s *countingSession) StageProfile(ctx context.Context, c platform.Candidate) bool {
	s.note("stage", c)
	return s.Session.StageProfile(ctx, c)
}

func (s *countingSession) Accept(ctx context.Context, c platform.Candidate) (platform.Verdict, error) {
	s.note("gate", c)
	if s.failGates {
		return platform.Verdict{Failure: "correctness", Reason: "failed by the test"}, nil
	}
	return s.Session.Accept(ctx, c)
}

func (s *countingSession) UnstageProfile() {
	if s.noteUnstage {
		s.note("unstage", platform.Candidate{ID: "all"})
	}
	s.Session.UnstageProfile()
}

// TestStagedProfileAfterFailedGates: a best that fails its acceptance gate
// leaves no staged profile running: the next one in the chain is staged
// instead, and where every gate fails, what was staged is ended before the
// input's profile.
func TestStagedProfileAfterFailedGates(t *testing.T) {
	dir := kernelDir(t)
	// An input fifty times slower than the fast variant: the promotion does
	// not depend on the machine's noise.
	slow := "import torch\n\n\ndef kernel_function(x, y):\n    for _ in range(50):\n" +
		"        out = torch.where(x + y > 0, x + y, torch.zeros_like(x)) * 0.5\n    return out\n"
	if err := os.WriteFile(filepath.Join(dir, "input.py"), []byte(slow), 0o644); err != nil {
		t.Fatal(err)
	}
	_, in, cs := oneTuneRound(t, dir, configs.ProfileFinal)
	cs.failGates, cs.noteUnstage = true, true
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Best.ID != store.InputID {
		t.Fatalf("best %s, want the input (every gate failed)", res.Best.ID)
	}
	var gated []string
	for _, o := range cs.order {
		if id, ok := strings.CutPrefix(o, "gate "); ok {
			gated = append(gated, id)
		}
	}
	if len(gated) == 0 {
		t.Fatalf("no gate ran: %v (the fast variant was not promoted)", cs.order)
	}
	var want []string
	for _, id := range gated {
		want = append(want, "stage "+id, "gate "+id)
	}
	want = append(want, "unstage all", "profile "+store.InputID)
	if !slices.Equal(cs.order, want) {
		t.Errorf("stages, gates and profiles %v, want %v", cs.order, want)
	}
}

func (s *countingSession) LastProfile() {
	s.mu.Lock()
	s.lastAt = append(s.lastAt, len(s.profiled))
	s.mu.Unlock()
	s.Session.LastProfile()
}

func (s *countingSession) PrepareProfile() {
	s.mu.Lock()
	if s.rounds != nil {
		s.preparedAt = append(s.preparedAt, s.rounds())
	}
	s.mu.Unlock()
	s.Session.PrepareProfile()
}

func counting(t testing.TB, s platform.Session) *countingSession {
	ws, ok := s.(*worker.Session)
	if !ok {
		t.Fatalf("the test session is a %T, not a worker session", s)
	}
	return &countingSession{Session: ws}
}

func (s *countingSession) Profile(ctx context.Context, c platform.Candidate) (roofline.Metrics, error) {
	s.note("profile", c)
	s.mu.Lock()
	s.profiled = append(s.profiled, c.ID)
	if s.rounds != nil {
		s.at = append(s.at, s.rounds())
	}
	s.mu.Unlock()
	return s.Session.Profile(ctx, c)
}

// TestProfilePolicy: profile_candidates decides which timed candidates reach
// the profiler; the others are on the synthetic roofline with the reason.
func TestProfilePolicy(t *testing.T) {
	for _, tc := range []struct {
		policy   string
		want     []string // directions profiled
		prepared []int    // finished rounds at each PrepareProfile call (ahead of a profile)
	}{
		// Ahead of the input's profile, in round 0.
		{configs.ProfileImproving, []string{"input", "(the best)"}, []int{0}},
		// Only the best, once, when the run ends: the input too when it stays
		// the best. The profiler is told when round 1 starts and when the
		// run ends, not in round 0 (no profile follows the input's timing).
		{configs.ProfileFinal, []string{"(the best, the input included)"}, []int{1, 2}},
		{configs.ProfileAll, []string{"input", "tune: FUSED=1", "tune: ROWS=1"}, []int{0}},
		{configs.ProfileNone, nil, nil},
	} {
		t.Run(tc.policy, func(t *testing.T) {
			e, in, cs := oneTuneRound(t, kernelDir(t), tc.policy)
			cs.rounds = func() int { return e.eventKinds()[EventRoundFinished] }
			res, err := Run(context.Background(), in)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			all := mustCandidates(t, e.store, res.RunID)
			if tc.policy == configs.ProfileFinal {
				// The best is profiled once, after the last round (0 and 1).
				for i, id := range cs.profiled {
					if cs.at[i] != 2 {
						t.Errorf("%s profiled after %d finished rounds, want 2 (when the run ends)", id, cs.at[i])
					}
				}
			}
			var got []string
			for _, id := range cs.profiled {
				c := all[id]
				if c.ParentID == "" {
					got = append(got, "input")
				} else {
					got = append(got, c.Direction)
				}
			}
			slices.Sort(got)
			// Under "improving" the best is profiled when promoted; whether the
			// fast variant is promoted depends on the timing noise here.
			var want []string
			for _, w := range tc.want {
				switch {
				case w == "(the best, the input included)" && res.Best.ID == store.InputID:
					want = append(want, "input")
				case w != "(the best)" && w != "(the best, the input included)":
					want = append(want, w)
				case res.Best.ID != store.InputID:
					want = append(want, all[res.Best.ID].Direction)
				}
			}
			slices.Sort(want)
			tc.want = want
			if !slices.Equal(got, tc.want) {
				t.Fatalf("profiled %v, want %v", got, tc.want)
			}
			if !slices.Equal(cs.preparedAt, tc.prepared) {
				t.Errorf("PrepareProfile called after %v finished rounds, want %v", cs.preparedAt, tc.prepared)
			}
			// Under "final" the profiler is told, before the best's profile,
			// that it is the run's last (nothing is started ahead after it).
			if wantLast := tc.policy == configs.ProfileFinal; wantLast != slices.Equal(cs.lastAt, []int{0}) {
				t.Errorf("LastProfile called with %v profiles done, want [0] only under final", cs.lastAt)
			}
			// Under "final" a best other than the input is staged before its
			// acceptance gate, then profiled; nothing else is ever staged.
			wantOrder := []string{"gate " + res.Best.ID}
			switch {
			case tc.policy == configs.ProfileFinal && res.Best.ID != store.InputID:
				wantOrder = []string{"stage " + res.Best.ID, "gate " + res.Best.ID, "profile " + res.Best.ID}
			case tc.policy == configs.ProfileFinal:
				wantOrder = []string{"profile " + store.InputID}
			case res.Best.ID == store.InputID:
				wantOrder = nil
			}
			var order []string
			for _, o := range cs.order {
				if tc.policy == configs.ProfileFinal || !strings.HasPrefix(o, "profile ") {
					order = append(order, o)
				}
			}
			if !slices.Equal(order, wantOrder) {
				t.Errorf("stages, gates and profiles %v, want %v", cs.order, wantOrder)
			}
			if best := all[res.Best.ID]; tc.policy != configs.ProfileNone && (best.Metrics == nil || strings.HasPrefix(best.Metrics.Fallback, notProfiled)) {
				t.Errorf("the best %s kept the policy's synthetic metrics: %+v", best.ID, best.Metrics)
			}
			for id, c := range all {
				if c.Metrics == nil || slices.Contains(cs.profiled, id) {
					continue
				}
				if !strings.HasPrefix(c.Metrics.Fallback, notProfiled) || c.Roofline == nil {
					t.Errorf("%s (%s) not profiled but fallback %q, roofline %v", id, c.Direction, c.Metrics.Fallback, c.Roofline)
				}
			}
		})
	}
}
