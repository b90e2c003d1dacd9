package ui

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/sweep"
)

// Hostile text the pages must show as text: a kernel that would set
// window.__pwned and raise an alert if it ever ran, and an LLM reply full of
// markup.
const (
	hostileSource = "import triton\n# <script>window.__pwned = 1; alert(1)</script>\n@triton.jit\ndef k(x):\n    pass\n"
	hostileReply  = "Here is the kernel: <img src=x onerror=\"window.__pwned=2\"> <b>bold</b> </pre><script>window.__pwned=3</script>\n"
	hostileRunID  = "hostile-run"
)

// hostileRun records, in the history of kernelDir, a run left running: its
// input kernel timed, and in round 1 a candidate with hostileSource
// rejected by the correctness check, whose run dir holds hostileReply as
// its optimize reply and a roofline plot. It returns the writable store
// (closed with the test) and the run dir.
func hostileRun(t testing.TB, kernelDir string) (*store.Store, string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(kernelDir, ".kagent", "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	dir := filepath.Join(kernelDir, ".kagent", "runs", hostileRunID)
	run, err := st.CreateRun(ctx, store.Run{ID: hostileRunID, KernelDir: kernelDir, Problem: "hostile", Strategy: "greedy", Platform: "cpu", Device: "x86_64"})
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]string{"dir": dir})
	timing := platform.Timing{MedianMS: 4, P20MS: 3.9, P80MS: 4.1, CV: 0.02, N: 10, Method: "process CPU time (test)"}
	fast := platform.Timing{MedianMS: 2, CV: 0.03, N: 10, Method: "process CPU time (test)"}
	steps := []func() error{
		func() error {
			_, err := st.AddEvent(ctx, store.Event{RunID: run.ID, Round: store.NoRound, Kind: agent.StoreEventRunDir, Message: dir, Data: data})
			return err
		},
		func() error {
			return st.SetBaseline(ctx, run.ID, platform.TargetEager, platform.Timing{MedianMS: 8, N: 10})
		},
		func() error { return st.StartRound(ctx, run.ID, 0) },
		func() error {
			_, err := st.AddCandidate(ctx, store.Candidate{RunID: run.ID, ID: store.InputID, Direction: "input kernel", Source: "import triton\n@triton.jit\ndef k(x):\n    pass\n"})
			return err
		},
		func() error {
			_, err := st.UpdateCandidate(ctx, run.ID, store.InputID, store.Update{Status: store.StatusVerified, Verdict: &platform.Verdict{Passed: true}})
			return err
		},
		func() error {
			_, err := st.UpdateCandidate(ctx, run.ID, store.InputID, store.Update{Status: store.StatusTimed, Timing: &timing})
			return err
		},
		func() error { return st.SetBest(ctx, run.ID, store.InputID) },
		func() error { return st.FinishRound(ctx, run.ID, 0, nil) },
		func() error { return st.StartRound(ctx, run.ID, 1) },
		func() error {
			_, err := st.AddCandidate(ctx, store.Candidate{RunID: run.ID, ID: "r1c1", Round: 1, Slot: 1, ParentID: store.InputID,
				Direction: "memory: <i>fuse</i> the passes", Source: hostileSource})
			return err
		},
		func() error {
			_, err := st.UpdateCandidate(ctx, run.ID, "r1c1", store.Update{Status: store.StatusRejected, Verdict: &platform.Verdict{
				Failure: "correctness", Reason: "max abs err 3.2 <b>at</b> [0, 1]",
				Checks: []platform.Check{{Name: "static", Passed: true, Reason: "ok"}, {Name: "correctness", Reason: "max abs err 3.2 <b>at</b> [0, 1]"}}}})
			return err
		},
		func() error {
			_, err := st.AddCandidate(ctx, store.Candidate{RunID: run.ID, ID: "r1c2", Round: 1, Slot: 2, ParentID: store.InputID,
				Direction: "compute: vectorize", Source: "import triton\n@triton.jit\ndef k(x):\n    return\n"})
			return err
		},
		func() error {
			_, err := st.UpdateCandidate(ctx, run.ID, "r1c2", store.Update{Status: store.StatusVerified, Verdict: &platform.Verdict{Passed: true}})
			return err
		},
		func() error {
			_, err := st.UpdateCandidate(ctx, run.ID, "r1c2", store.Update{Status: store.StatusTimed, Timing: &fast})
			return err
		},
		func() error {
			_, err := st.AddCandidate(ctx, store.Candidate{RunID: run.ID, ID: "r1c9", Round: 1, Slot: 9, ParentID: store.InputID,
				Direction: "tune: BLOCK=256", Source: "import triton\n@triton.jit\ndef k(x):\n    return 3\n"})
			return err
		},
		func() error {
			reason := "slower than the best: 5 of 5 quick timed calls took longer than the cutoff"
			_, err := st.UpdateCandidate(ctx, run.ID, "r1c9", store.Update{Status: store.StatusRejected, Verdict: &platform.Verdict{
				Failure: platform.FailureSlower, Reason: reason, Checks: []platform.Check{{Name: platform.FailureSlower, Reason: reason}}}})
			return err
		},
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	files := map[string]string{
		"roofline.svg":                      `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><script>window.__pwned=4</script><rect width="200" height="100" fill="#ccd"/></svg>`,
		"report.md":                         "# report\n<script>alert(1)</script>\n",
		"round001/cand1/optimize.prompt.md": "## user\n\nMake it <faster>.\n",
		"round001/cand1/optimize.reply.md":  hostileReply,
		"round001/diagnose-input.reply.md":  "[{\"summary\": \"<u>memory</u>\"}]\n",
		"round001/cand1/kernel.py":          hostileSource,
		"../../secret.txt":                  "secret",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A link out of the run dir, which the server must refuse.
	if err := os.Symlink(filepath.Join(kernelDir, ".kagent", "secret.txt"), filepath.Join(dir, "leak.txt")); err != nil {
		t.Fatal(err)
	}
	return st, dir
}

// sweepDir writes a sweep dir with results.json of two problems: one
// correct and 2x faster than eager, one failed.
func sweepDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	m := sweep.Manifest{Format: sweep.FormatManifest, Source: "kb", Level: 1, Selection: "1-2", Strategy: "greedy",
		Problems: []sweep.Problem{{ID: 1, Name: "ReLU", File: "1_ReLU.py"}, {ID: 2, Name: "Softmax<b>", File: "2_Softmax.py"}}}
	res := sweep.Results{Format: sweep.FormatResults, Sweep: m, Problems: []int{1, 2}, Complete: true, UpdatedAt: time.Now(),
		Results: []sweep.ProblemResult{
			{ID: 1, Name: "ReLU", File: "1_ReLU.py", Level: 1, Status: sweep.StatusDone, Correct: true, RunID: "1_ReLU",
				Kernel: &sweep.Timing{MedianMS: 1}, Eager: &sweep.Timing{MedianMS: 2}, SpeedupEager: 2, SpeedupInput: 1.5},
			{ID: 2, Name: "Softmax<b>", File: "2_Softmax.py", Level: 1, Status: sweep.StatusFailed, Error: "no correct kernel <script>"},
		}}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, sweep.ResultsFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
