package worker

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// TestScreenSplitsABatchThatHangs: a variant that never returns hangs the
// whole screen call; the call is killed at its limit and split in halves on
// fresh workers until the hanging variant is alone, which fails as a
// timeout (after its call's limit: the verification limit and a quarter of
// the timing limit per variant), while the others are screened. The limits
// are several times what a correct variant's call takes on a loaded CPU.
func TestScreenSplitsABatchThatHangs(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "problems", "add_relu"))
	s := cpuSession(t, dir, EngineOptions{WarmupMS: 2, RepMS: 5, VerifyTimeout: 12 * time.Second, BenchTimeout: 8 * time.Second})
	cs := []platform.Candidate{cpuCandidate("add_relu_ok"), cpuCandidate("fault_infinite_loop"), cpuCandidate("wrong_values")}
	rep, err := s.Screen(context.Background(), cs, platform.ScreenOptions{Calls: 3, WarmupMS: 1})
	if err != nil {
		t.Fatalf("screen: %v", err)
	}
	if len(rep.Results) != 3 {
		t.Fatalf("%d results for 3 variants", len(rep.Results))
	}
	ok, hang, wrong := rep.Results[0], rep.Results[1], rep.Results[2]
	if !ok.Passed || ok.MedianMS <= 0 || ok.ID != "add_relu_ok" {
		t.Errorf("the correct variant: %+v", ok)
	}
	if hang.Passed || hang.Failure != "timeout" || !strings.Contains(hang.Reason, "within 14s") {
		t.Errorf("the hanging variant: %+v, want a timeout", hang)
	}
	if wrong.Passed || wrong.Failure != "correctness" {
		t.Errorf("the wrong variant: %+v, want correctness", wrong)
	}
	// The batch, its halves [ok] and [hang, wrong], then [hang] and [wrong].
	if rep.Calls != 5 {
		t.Errorf("%d worker calls, want 5 (the batch split twice)", rep.Calls)
	}
	t.Logf("%d calls in %s: %+v", rep.Calls, rep.Duration.Round(time.Millisecond), rep.Results)
}

// TestCompileAhead: under Triton's interpreter the op answers at once; with
// the compiler (torch-only candidates here: nothing to compile, but the
// batch is loaded and each recorded in one runner) the candidates that load
// are counted, and a candidate that hangs in its recorded call ends the call
// at its limit with an error (never a verdict), after which the session
// verifies as before.
func TestCompileAhead(t *testing.T) {
	dir, _ := filepath.Abs(filepath.Join("testdata", "problems", "add_relu"))
	ctx := context.Background()
	s := cpuSession(t, dir, EngineOptions{WarmupMS: 2, RepMS: 5, VerifyTimeout: 10 * time.Second})
	rep, err := s.CompileAhead(ctx, []platform.Candidate{cpuCandidate("add_relu_ok"), cpuCandidate("wrong_values")})
	if err != nil || rep.Skipped == "" || rep.Loaded != 0 {
		t.Fatalf("under the interpreter: %+v, %v; want skipped", rep, err)
	}

	// Sessions with Triton's compiler (no interpreter), compile_ahead on.
	t.Setenv("KAGENT_COMPILE_AHEAD", "1")
	compiler := func() *Session {
		return cpuSessionWith(t, dir, EngineOptions{WarmupMS: 2, RepMS: 5, VerifyTimeout: 10 * time.Second},
			func(c *SessionConfig) { c.Env = []string{"CUDA_VISIBLE_DEVICES="} })
	}
	c := compiler()
	rep, err = c.CompileAhead(ctx, []platform.Candidate{cpuCandidate("add_relu_ok"), cpuCandidate("wrong_values"),
		cpuCandidate("fault_import_error")})
	if err != nil || rep.Skipped != "" || rep.Loaded != 2 || rep.Error != "" {
		t.Fatalf("with the compiler: %+v, %v; want the 2 candidates that import loaded", rep, err)
	}
	rep, err = c.CompileAhead(ctx, []platform.Candidate{cpuCandidate("add_relu_ok"), cpuCandidate("fault_infinite_loop")})
	if err == nil || !strings.Contains(err.Error(), "compile 2 candidates ahead") {
		t.Fatalf("a hanging candidate's batch returned %+v, %v; want an error at the call's limit", rep, err)
	}
	v, err := c.Verify(ctx, cpuCandidate("add_relu_ok"))
	if err != nil || !v.Passed {
		t.Fatalf("verification after the hanging batch: %+v, %v", v, err)
	}

	// Off unless KAGENT_COMPILE_AHEAD=1 reaches the worker.
	for _, v := range []string{"", "0"} {
		t.Setenv("KAGENT_COMPILE_AHEAD", v)
		off := compiler()
		if rep, err := off.CompileAhead(ctx, []platform.Candidate{cpuCandidate("add_relu_ok"), cpuCandidate("wrong_values")}); err != nil ||
			!strings.Contains(rep.Skipped, "KAGENT_COMPILE_AHEAD=1 turns it on") {
			t.Fatalf("with KAGENT_COMPILE_AHEAD=%q: %+v, %v; want it off", v, rep, err)
		}
	}
}
