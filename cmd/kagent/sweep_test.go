package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

// sweepServer is the fake LLM scripted for the sweep's test problems (see
// sweep/testdata/README.md); the rules of extra come before the kernel and
// problem rules.
func sweepServer(t *testing.T, extra ...func(*llmtest.Server)) *llmtest.Server {
	t.Helper()
	srv := llmtest.NewServer(t)
	srv.On("# Task: diagnose", llmtest.Reply{Text: `{"bottlenecks": [{"category": "memory", "summary": "an intermediate tensor", "fixes": [{"fix": "work in place"}]}]}`})
	srv.On("# Task: reflect", llmtest.Reply{Text: `{"was_diagnosis_correct": true, "was_fix_effective": true}`})
	for _, f := range extra {
		f(srv)
	}
	replies := filepath.Join(repoRoot(t), "sweep", "testdata", "replies")
	read := func(name string) llmtest.Reply {
		b, err := os.ReadFile(filepath.Join(replies, name))
		if err != nil {
			t.Fatal(err)
		}
		return llmtest.Reply{Text: "```python\n" + string(b) + "```\n"}
	}
	keys := []string{"1_Add", "2_Scale", "3_ReLU", "4_Square", "5_Axpby", "6_Swish"}
	for _, k := range keys {
		next := k + ".v2.py"
		if _, err := os.Stat(filepath.Join(replies, next)); err != nil {
			next = k + ".v1.py"
		}
		srv.On("kagent-test kernel: "+k+" v1", read(next))
	}
	for _, k := range keys {
		srv.On("kagent-test problem: "+k, read(k+".v1.py"))
	}
	return srv
}

// sweepConfig writes a config for quick CPU runs against srv.
func sweepConfig(t *testing.T, srv *llmtest.Server) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "quick.yaml")
	y := fmt.Sprintf(`strategy: greedy
platform: cpu
platform_kwargs: {triton: "off"} # the test kernels are plain torch
max_rounds: 1
refine_attempts: 1
benchmark_warmup: 5
benchmark_repeat: 30
strategy_config:
  max_no_improvement: 1
llm:
  provider: openai
  base_url: %s
  model: fake
  max_retries: 0
`, srv.BaseURL())
	if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestSweepCommand runs `kagent sweep` on two test problems, then the same
// two as shards 0/2 and 1/2, `sweep merge` and `sweep status`.
func TestSweepCommand(t *testing.T) {
	if os.Getenv("KAGENT_PYTHON") == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	srv := sweepServer(t)
	cfg := sweepConfig(t, srv)
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	common := []string{"sweep", "--kernelbench", src, "--level", "1", "--problems", "1,6", "--config", cfg, "--seeds", "1"}

	r := run(t, work, append(common, "--out", "local")...)
	if r.code != ExitOK {
		t.Fatalf("sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"2 of 2 problems have a result: 1 correct, 1 failed, 0 errors", "report: "} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("sweep output lacks %q:\n%s", w, r.stdout)
		}
	}
	for _, f := range []string{"report.md", "fast_p.svg", "results.json", "eval_results.json", "history.db"} {
		if _, err := os.Stat(filepath.Join(work, "local", f)); err != nil {
			t.Errorf("sweep dir lacks %s", f)
		}
	}
	// Again: nothing to do.
	r = run(t, work, append(common, "--out", "local")...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "(2 finished before)") {
		t.Errorf("second sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	for _, sh := range []string{"0/2", "1/2"} {
		r = run(t, work, append(common, "--out", "sharded", "--shard", sh)...)
		if r.code != ExitOK || !strings.Contains(r.stdout, "kagent sweep merge") {
			t.Fatalf("shard %s: exit %d\n%s\n%s", sh, r.code, r.stdout, r.stderr)
		}
	}
	r = run(t, work, "sweep", "status", "sharded")
	if r.code != ExitOK || !strings.Contains(r.stdout, "shard-0-of-2.json") || !strings.Contains(r.stdout, "1 done, 1 failed") {
		t.Errorf("status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = run(t, work, "sweep", "merge", "sharded")
	if r.code != ExitOK || !strings.Contains(r.stdout, "report: ") {
		t.Fatalf("merge: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	md, err := os.ReadFile(filepath.Join(work, "sharded", "report.md"))
	// fast_0 against torch.compile: 1 of 2 where torch.compile runs (torch 2.x), n/a where it does not.
	if err != nil || !strings.Contains(string(md), "| 0 | 0.500 (1/2) | 0.500 (1/2) |") && !strings.Contains(string(md), "| 0 | 0.500 (1/2) | n/a |") {
		t.Errorf("merged report: %v\n%s", err, md)
	}

	oneLineError(t, run(t, work, append(common, "--out", "local", "--problems", "1-x")...), ExitUsage, `"1-x" is not a number`)
	oneLineError(t, run(t, work, append(common, "--out", "local", "--shard", "2/2")...), ExitUsage, "i must be 0 to 1")
	oneLineError(t, run(t, work, append(common, "--out", "local", "--problems", "2")...), ExitUsage, "was started for level 1 problems 1,6")
	oneLineError(t, run(t, work, "sweep", "merge", t.TempDir()), ExitUsage, "no sweep results")
}

func TestSweepAndGenerateNeedAnLLM(t *testing.T) {
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	oneLineError(t, run(t, work, "sweep", "--kernelbench", src, "--platform", "cpu"), ExitUsage, "no llm configured", "--kernels")
	oneLineError(t, run(t, work, "generate", "--problem", filepath.Join(src, "level1", "1_Add.py"), "--platform", "cpu"), ExitUsage, "no llm configured")
	oneLineError(t, run(t, work, "generate", "--platform", "cpu"), ExitUsage, "--problem is required")
	oneLineError(t, run(t, work, "sweep", "--platform", "cpu"), ExitUsage, "--kernelbench is required")
}

// TestGenerateCommand writes a kernel dir for a test problem, then
// optimizes it.
func TestGenerateCommand(t *testing.T) {
	if os.Getenv("KAGENT_PYTHON") == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	srv := sweepServer(t)
	cfg := sweepConfig(t, srv)
	work := t.TempDir()
	problem := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench", "level1", "5_Axpby.py")
	r := run(t, work, "generate", "--problem", problem, "--config", cfg, "--seeds", "2")
	if r.code != ExitOK || !strings.Contains(r.stdout, "passed verification") {
		t.Fatalf("generate: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"problem.py", "input.py", "kagent.yaml", "README.md"} {
		if _, err := os.Stat(filepath.Join(work, "5_Axpby", f)); err != nil {
			t.Errorf("kernel dir lacks %s", f)
		}
	}
	oneLineError(t, run(t, work, "generate", "--problem", problem, "--config", cfg), ExitUsage, "already holds a kernel")
	r = run(t, work, "optimize", "--kernel-dir", "5_Axpby", "--config", cfg)
	if r.code != ExitOK && r.code != ExitNoImprovement {
		t.Fatalf("optimize the generated kernel dir: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	problem = filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench", "level1", "6_Swish.py")
	r = run(t, work, "generate", "--problem", problem, "--config", cfg, "--seeds", "2")
	oneLineError(t, r, ExitError, "all 2 seeds failed", "seed 1:", "seed 2:")
	if !strings.Contains(r.stdout, "LAST FAILURE") {
		t.Errorf("no per-seed table:\n%s", r.stdout)
	}
}

// TestSweepKilledThenResumed kills `kagent sweep` (SIGKILL) while problem 2
// waits for its rewrite; status then shows it interrupted, and the same
// command again skips problem 1, does not generate problem 2 again, resumes
// its optimization and finishes problem 3.
func TestSweepKilledThenResumed(t *testing.T) {
	if os.Getenv("KAGENT_PYTHON") == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	srv := sweepServer(t, func(s *llmtest.Server) {
		s.On("kagent-test kernel: 2_Scale v1", llmtest.Reply{Text: "```python\n# never arrives\n```\n", Delay: 5 * time.Minute})
	})
	src := filepath.Join(repoRoot(t), "sweep", "testdata", "kernelbench")
	work := t.TempDir()
	args := []string{"sweep", "--kernelbench", src, "--problems", "1-3", "--seeds", "1", "--parallel", "1", "--out", "s"}

	cmd := exec.Command(binary, append(args, "--config", sweepConfig(t, srv))...)
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "KAGENT_CACHE_DIR="+t.TempDir())
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for !strings.Contains(lastPrompt(srv), "kagent-test kernel: 2_Scale v1") || !strings.Contains(lastPrompt(srv), "# Task: make this Triton kernel faster") {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the sweep never asked for 2_Scale's rewrite")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	r := run(t, work, "sweep", "status", "s")
	if r.code != ExitOK || !strings.Contains(r.stdout, "1 done, 1 interrupted, 1 pending") {
		t.Errorf("status after the kill: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	srv2 := sweepServer(t)
	r = run(t, work, append(args, "--config", sweepConfig(t, srv2))...)
	if r.code != ExitOK || !strings.Contains(r.stdout, "3 of 3 problems have a result: 3 correct") || !strings.Contains(r.stdout, "(1 finished before)") {
		t.Fatalf("resumed sweep: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, req := range srv2.Requests() {
		p := req.Prompt()
		if strings.Contains(p, "# Task: write a Triton implementation") && !strings.Contains(p, "kagent-test problem: 3_ReLU") {
			t.Errorf("the resumed sweep generated again: %.120s", p)
		}
	}
	if !strings.Contains(r.stderr, "resuming the problem's optimization run") {
		t.Errorf("no resume of 2_Scale's run in the log:\n%s", r.stderr)
	}
}

// lastPrompt is the prompt of the server's latest request.
func lastPrompt(srv *llmtest.Server) string {
	reqs := srv.Requests()
	if len(reqs) == 0 {
		return ""
	}
	return reqs[len(reqs)-1].Prompt()
}
