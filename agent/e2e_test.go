package agent

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search"
)

// TestBeamFourKinds runs beam search on the cpu platform with the fake LLM
// proposing, from one diagnosis, a broken kernel, a cheating one, a slower
// correct one and a faster one: the faster one wins, the others are
// rejected (or kept as slower) for the right reasons.
func TestBeamFourKinds(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyBeam)
	cfg.StrategyConfig.NumTopKernels, cfg.StrategyConfig.NumBottlenecks = 1, 4
	cfg.NumWorkers, cfg.MaxRounds = 4, 1
	f := newFakeLLM(t, cfg)
	script(t, f.srv, []string{diagnosis("BROKEN", "CHEAT", "SLOW", "FAST")},
		map[string][]llmtest.Reply{
			"BROKEN": {pyReply(candidateSource(t, "broken.py"))},
			"CHEAT":  {pyReply(candidateSource(t, "cheat.py"))},
			"SLOW":   {pyReply(candidateSource(t, "slow.py"))},
			"FAST":   {pyReply(candidateSource(t, "fast.py"))},
		},
		map[string][]llmtest.Reply{
			"BROKEN": {pyReply(candidateSource(t, "banned.py"))},
			"CHEAT":  {{Text: "I cannot fix this without caching."}},
		})
	res, err := Run(context.Background(), e.input(cfg, f.client))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	cs := mustCandidates(t, e.store, res.RunID)
	fast, _ := byDirection(cs, 1, "FAST")
	if !res.Improved || res.Best.ID != fast.ID || res.SpeedupVsInput <= 1 {
		t.Fatalf("best %s (improved %v, %.2fx), want the FAST rewrite %s", res.Best.ID, res.Improved, res.SpeedupVsInput, fast.ID)
	}
	if res.Acceptance == nil || !res.Acceptance.Passed {
		t.Errorf("the best did not pass the acceptance gate: %+v", res.Acceptance)
	}
	// The broken kernel fails correctness; its refinement, fed that failure, comes back banned.
	broken, _ := byDirection(cs, 1, "BROKEN")
	if failureOf(broken) != "correctness" {
		t.Errorf("broken: %s (%s), want correctness", failureOf(broken), broken.Status)
	}
	var fix store.Candidate
	for _, c := range cs {
		if c.RefineOf == broken.ID {
			fix = c
		}
	}
	if fix.RefineAttempt != 1 || failureOf(fix) != "static" {
		t.Errorf("refinement of broken: %+v, want attempt 1 rejected by static", fix.ID)
	}
	if n := f.countPrompts("correctness: draw"); n != 1 {
		t.Errorf("refine prompts carrying the correctness reason: %d, want 1", n)
	}
	cheat, _ := byDirection(cs, 1, "CHEAT")
	if failureOf(cheat) != "caching" {
		t.Errorf("cheat: %s, want caching", failureOf(cheat))
	}
	for _, c := range cs {
		if c.RefineOf == cheat.ID && failureOf(c) != failExtract {
			t.Errorf("a reply without code: %s, want %s", failureOf(c), failExtract)
		}
	}
	slow, _ := byDirection(cs, 1, "SLOW")
	if slow.Status != store.StatusProfiled || slow.MedianMS() <= res.Input.Timing.MedianMS {
		t.Errorf("slow: %s %.4g ms, want profiled and slower than the input (%.4g ms)", slow.Status, slow.MedianMS(), res.Input.Timing.MedianMS)
	}
	// One diagnosis per parent per round, shared by its four directions.
	if n := f.countPrompts("# Task: diagnose"); n != 1 {
		t.Errorf("diagnose calls: %d, want 1", n)
	}
	if n := f.countPrompts("# Task: reflect"); n != 4 {
		t.Errorf("reflections: %d, want 4 (failed attempts too)", n)
	}
	for _, f := range []string{"round001/cand1/diagnose.prompt.md", "round001/cand1/diagnose.reply.md", "round001/cand1/optimize.prompt.md",
		"round001/cand4/kernel.py", "round001/cand4/timing.json", "round001/cand4/metrics.json", "round001/cand4/reflect.reply.md",
		"round000/input/kernel.py", "best_kernel.py", "report.md", "report.json", "events.jsonl", "config.yaml", "input/problem.py"} {
		if _, err := os.Stat(filepath.Join(res.RunDir, f)); err != nil {
			t.Errorf("run dir lacks %s", f)
		}
	}
	for _, f := range []string{"report.md", "report.json"} { // no absolute path
		b, err := os.ReadFile(filepath.Join(res.RunDir, f))
		if err != nil || strings.Contains(string(b), e.dir) || strings.Contains(string(b), e.runDir) {
			t.Errorf("%s holds the kernel dir's or the run dir's absolute path (or: %v)", f, err)
		}
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, "optimized_kernel_beam_search.py")); err != nil || string(b) != fast.Source {
		t.Errorf("optimized_kernel_beam_search.py: %v", err)
	}
	kinds := e.eventKinds()
	for _, k := range []string{EventRunStarted, EventRoundStarted, EventCandidateVerified, EventCandidateTimed, EventPromoted, EventRoundFinished, EventRunFinished} {
		if kinds[k] == 0 {
			t.Errorf("no %s event (%v)", k, kinds)
		}
	}
	calls, _ := e.store.LLMCalls(context.Background(), res.RunID)
	if len(calls) != f.srv.Count() {
		t.Errorf("store recorded %d llm calls, the server saw %d", len(calls), f.srv.Count())
	}
}

// TestBeamDistinctParents: rewrites that repeat a kernel (the parent
// returned unchanged, or the same kernel reformatted) are rejected as
// duplicates without running, and the beam never holds two kernels with the
// same normalised source.
func TestBeamDistinctParents(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyBeam)
	cfg.StrategyConfig.NumTopKernels, cfg.StrategyConfig.NumBottlenecks = 2, 2
	cfg.MaxRounds = 2
	cfg.DivergenceThreshold = 1e6 // keep the slower kernels in the beam
	f := newFakeLLM(t, cfg)
	input, _ := os.ReadFile(filepath.Join("testdata", "relu_scale", "input.py"))
	script(t, f.srv, []string{diagnosis("FAST", "SAME", "AGAIN", "SLOW")},
		map[string][]llmtest.Reply{
			"FAST":  {pyReply(candidateSource(t, "fast.py"))},
			"SAME":  {pyReply("# unchanged\n" + string(input))},
			"AGAIN": {pyReply(candidateSource(t, "fast_again.py"))},
			"SLOW":  {pyReply(candidateSource(t, "slow.py"))},
		}, nil)
	in := e.input(cfg, f.client)
	prof := counting(t, e.sess)
	in.Session = prof
	res, err := Run(context.Background(), in)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	ctx := context.Background()
	detail, err := e.store.GetRun(ctx, res.RunID)
	if err != nil {
		t.Fatal(err)
	}
	cs := mustCandidates(t, e.store, res.RunID)
	dups := 0
	for _, c := range cs {
		if failureOf(c) == failDup {
			dups++
			if c.Timing != nil {
				t.Errorf("duplicate %s was timed", c.ID)
			}
		}
	}
	if dups == 0 {
		t.Errorf("no rewrite was rejected as a duplicate")
	}
	for _, r := range detail.Rounds {
		var s search.State
		if err := json.Unmarshal(r.State, &s); err != nil {
			t.Fatal(err)
		}
		seen := map[string]string{}
		for _, id := range search.BeamMembers(&s) {
			h := cs[id].SourceHash
			if other, ok := seen[h]; ok {
				t.Errorf("round %d: beam holds %s and %s with the same normalised source", r.Index, other, id)
			}
			seen[h] = id
		}
		t.Logf("round %d beam %v", r.Index, search.BeamMembers(&s))
	}
	if !res.Improved {
		t.Errorf("no improvement")
	}
	// Round 2 diagnosed each distinct parent once.
	beam1 := search.BeamMembers(ptr(mustState(t, detail.Rounds[1].State)))
	if len(beam1) != 2 {
		t.Errorf("round 1 beam %v, want 2 distinct kernels", beam1)
	}
	if n := f.countPrompts("# Task: diagnose"); n != 1+len(beam1) {
		t.Errorf("diagnose calls: %d, want %d", n, 1+len(beam1))
	}
	// Under profile_candidates "improving", every parent was profiled before
	// its diagnosis (the input in round 0, a best when promoted, another
	// beam member just before it was diagnosed), and no candidate twice.
	seen := map[string]int{}
	for _, id := range prof.profiled {
		seen[id]++
	}
	for _, c := range cs {
		if c.ParentID != "" && seen[c.ParentID] == 0 {
			t.Errorf("parent %s of %s was never profiled", c.ParentID, c.ID)
		}
	}
	for id, n := range seen {
		if n > 1 {
			t.Errorf("%s profiled %d times", id, n)
		}
	}
}

func mustState(t testing.TB, b json.RawMessage) search.State {
	t.Helper()
	var s search.State
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestGreedyPlateau: greedy promotes the faster rewrite, then stops after
// max_no_improvement rounds without a promotion.
func TestGreedyPlateau(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyGreedy)
	cfg.MaxRounds = 10
	cfg.StrategyConfig.MaxNoImprovement = 2
	f := newFakeLLM(t, cfg)
	script(t, f.srv, []string{diagnosis("FAST"), diagnosis("SLOW"), diagnosis("SLOWER")},
		map[string][]llmtest.Reply{
			"FAST":   {pyReply(candidateSource(t, "fast.py"))},
			"SLOW":   {pyReply(candidateSource(t, "slow.py"))},
			"SLOWER": {pyReply(strings.Replace(candidateSource(t, "slow.py"), "s = s * 1.0", "s = s * 1.0\n        s = s * 1.0", 1))},
		}, nil)
	res, err := Run(context.Background(), e.input(cfg, f.client))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if !strings.HasPrefix(res.StopReason, "plateau") || res.Rounds != 3 {
		t.Fatalf("stopped after %d rounds: %q, want a plateau after 3", res.Rounds, res.StopReason)
	}
	cs := mustCandidates(t, e.store, res.RunID)
	if res.Best.ID != "r1c1" || len(cs) != 4 {
		t.Errorf("best %s of %d candidates, want r1c1 of 4", res.Best.ID, len(cs))
	}
	// Greedy rewrites the best: rounds 2 and 3 start from r1c1.
	for _, id := range []string{"r2c1", "r3c1"} {
		if cs[id].ParentID != "r1c1" {
			t.Errorf("%s parent %s, want r1c1", id, cs[id].ParentID)
		}
	}
	if n := f.countPrompts("Directions already explored"); n == 0 {
		t.Errorf("later diagnoses were not told the directions tried")
	}
}

// TestBudgetStopsCleanly: a spent budget stops the run after the round in
// flight, as a finished run with the budget as the reason.
func TestBudgetStopsCleanly(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyGreedy)
	cfg.MaxRounds = 5
	cfg.Budget.MaxCalls = 3
	f := newFakeLLM(t, cfg)
	script(t, f.srv, []string{diagnosis("SLOW")}, map[string][]llmtest.Reply{"SLOW": {pyReply(candidateSource(t, "slow.py"))}}, nil)
	res, err := Run(context.Background(), e.input(cfg, f.client))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Status != store.RunFinished || !isBudgetStop(res.StopReason) || !strings.Contains(res.StopReason, "max_calls") {
		t.Fatalf("status %s, reason %q, want finished on max_calls", res.Status, res.StopReason)
	}
	if f.srv.Count() != 3 || res.Usage.Calls != 3 {
		t.Errorf("llm calls: server %d, store %d; want 3", f.srv.Count(), res.Usage.Calls)
	}
	if res.Rounds != 1 {
		t.Errorf("rounds %d, want 1", res.Rounds)
	}
}

// TestBudgetStopsOnEstimatedTokens: a server that reports no usage still
// spends the token budget (kagent estimates the tokens), and the run's
// records, events and reports say the tokens were estimated.
func TestBudgetStopsOnEstimatedTokens(t *testing.T) {
	e := newEnv(t, kernelDir(t))
	cfg := testConfig(configs.StrategyGreedy)
	cfg.MaxRounds = 5
	cfg.Budget.MaxTokens = 1 // spent by the first call
	f := newFakeLLM(t, cfg)
	f.srv.On("# Task: diagnose the performance bottlenecks", llmtest.Reply{Text: diagnosis("SLOW"), NoUsage: true})
	f.srv.On("- Summary: SLOW\n", llmtest.Reply{Text: pyReply(candidateSource(t, "slow.py")).Text, NoUsage: true})
	res, err := Run(context.Background(), e.input(cfg, f.client))
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if res.Status != store.RunFinished || !isBudgetStop(res.StopReason) || !strings.Contains(res.StopReason, "max_tokens") {
		t.Fatalf("status %s, reason %q, want finished on max_tokens", res.Status, res.StopReason)
	}
	if f.srv.Count() != 1 || res.Usage.Calls != 1 || res.Usage.EstimatedCalls != 1 || res.Usage.PromptTokens < 1000 ||
		res.Usage.CompletionTokens == 0 {
		t.Errorf("server saw %d calls; usage %+v, want 1 call with estimated tokens", f.srv.Count(), res.Usage.Totals)
	}
	md, err := os.ReadFile(filepath.Join(res.RunDir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "completion tokens (estimated)") || !strings.Contains(string(md), "reported no token usage") {
		t.Errorf("report.md does not say the tokens were estimated:\n%s", md)
	}
	b, err := os.ReadFile(filepath.Join(res.RunDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		LLM struct {
			Calls           int  `json:"calls"`
			TokensEstimated bool `json:"tokens_estimated"`
			EstimatedCalls  int  `json:"estimated_calls"`
		} `json:"llm"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.LLM.TokensEstimated || rep.LLM.EstimatedCalls != 1 || rep.LLM.Calls != 1 {
		t.Errorf("report.json llm = %+v", rep.LLM)
	}
	var last Event
	for _, line := range strings.Split(strings.TrimSpace(e.events.String()), "\n") {
		if json.Unmarshal([]byte(line), &last) != nil {
			t.Fatalf("event line %q", line)
		}
	}
	if last.Event != EventRunFinished || last.LLMEstimatedCalls != 1 {
		t.Errorf("last event = %+v, want run_finished with 1 estimated call", last)
	}
}

// noisyBaselines passes everything to the real session, but reports the
// first timings of the torch.compile baseline with the given CVs (and a median
// doubled, as a disturbed measurement has).
type noisyBaselines struct {
	platform.Session
	cvs   []float64
	calls int
}

func (s *noisyBaselines) Time(ctx context.Context, target platform.Target) (platform.Timing, error) {
	t, err := s.Session.Time(ctx, target)
	if err != nil || target.Kind != platform.TargetCompile {
		return t, err
	}
	if s.calls < len(s.cvs) {
		t.CV = s.cvs[s.calls]
		if t.CV > baselineMaxCV {
			t.MedianMS *= 2
		}
	}
	s.calls++
	return t, nil
}

// TestNoisyBaselineTimedAgain: a baseline measured with a CV above
// baselineMaxCV is timed again (at most baselineRetakes more times) and the
// steadiest measurement is the one the run's speedups use.
func TestNoisyBaselineTimedAgain(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cvs       []float64
		calls     int
		wantCV    float64
		doubledMS bool
	}{
		{"steady: timed once", []float64{0.01}, 1, 0.01, false},
		{"noisy then steady: the steady one is kept", []float64{0.14, 0.02}, 2, 0.02, false},
		{"noisy every time: the least noisy is kept", []float64{0.30, 0.20, 0.25}, 3, 0.20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, kernelDir(t))
			noisy := &noisyBaselines{Session: e.sess, cvs: tc.cvs}
			cfg := testConfig(configs.StrategyTune)
			cfg.MaxRounds = 1
			in := e.input(cfg, nil)
			in.Session = noisy
			in.Tuner = search.TunerFunc(func(context.Context, string, int) ([]search.Variant, error) { return nil, nil })
			res, err := Run(context.Background(), in)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			if noisy.calls != tc.calls {
				t.Errorf("compile baseline timed %d times, want %d", noisy.calls, tc.calls)
			}
			if res.Compile == nil || res.Compile.CV != tc.wantCV {
				t.Fatalf("kept compile baseline %+v, want the one with CV %g", res.Compile, tc.wantCV)
			}
			if res.Eager == nil || res.Eager.MedianMS <= 0 {
				t.Fatalf("eager baseline %+v", res.Eager)
			}
			// The stored baseline is the kept one (what a resumed run and the report use).
			d, err := e.store.GetRun(context.Background(), res.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if b := d.Baselines; b.Compile == nil || b.Compile.CV != tc.wantCV {
				t.Errorf("stored compile baseline %+v, want CV %g", d.Baselines.Compile, tc.wantCV)
			}
		})
	}
}
