package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/proc/proctest"
)

// promoteRealGains is configuration for runs that must find fast.py faster
// than the input: promotion asks for no more than min_improvement_pct, not
// noise_factor times the timing's spread as well. On a loaded machine the
// spread of a CPU timing exceeds 100%, and the default rule turns down
// even a rewrite measured 90% faster (the rule itself is agent's to test).
const promoteRealGains = "noise_factor: 0\n"

// writeConfig writes a config file holding yaml and returns its path.
func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kagent.yaml")
	if err := os.WriteFile(p, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// cpuKernelDir copies the agent's CPU test problem into a fresh kernel dir.
func cpuKernelDir(t *testing.T) string {
	t.Helper()
	if os.Getenv("KAGENT_PYTHON") == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	dir := filepath.Join(t.TempDir(), "relu_scale")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"problem.py", "input.py"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "agent", "testdata", "relu_scale", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func testKernel(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "agent", "testdata", "candidates", name))
	if err != nil {
		t.Fatal(err)
	}
	return "```python\n" + string(b) + "```\n"
}

// scriptedServer answers diagnoses with one direction whose rewrite is the
// named test kernel.
func scriptedServer(t *testing.T, kernel string) *llmtest.Server {
	srv := llmtest.NewServer(t)
	srv.On("# Task: diagnose", llmtest.Reply{Text: `{"bottlenecks": [{"category": "memory", "summary": "six passes over the data", "fixes": [{"fix": "fuse"}]}]}`})
	srv.On("# Task: reflect", llmtest.Reply{Text: `{"was_diagnosis_correct": true, "was_fix_effective": true}`})
	srv.On("# Task: make this Triton kernel faster", llmtest.Reply{Text: testKernel(t, kernel)})
	return srv
}

func lastEvent(t *testing.T, path string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var last map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("events line %q: %v", sc.Text(), err)
		}
		last = ev
	}
	return last
}

// TestOptimizeRecordThenReplay runs the real binary on the cpu platform:
// once against the fake LLM while recording, once from the recording only.
// Both find the faster kernel (exit 0), and the run history lists them.
func TestOptimizeRecordThenReplay(t *testing.T) {
	dir := cpuKernelDir(t)
	srv := scriptedServer(t, "fast.py")
	rec := filepath.Join(t.TempDir(), "transcript")
	events := filepath.Join(t.TempDir(), "events.jsonl")
	cfg := writeConfig(t, "strategy: greedy\n"+promoteRealGains)
	r := run(t, dir, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfg, "--max-rounds", "1",
		"--llm-provider", "openai", "--llm-base-url", srv.BaseURL(), "--llm-model", "fake", "--llm-record", rec, "--events", events)
	if r.code != ExitOK {
		t.Fatalf("recorded run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, w := range []string{"promoted", "best r1c1", "report: "} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q:\n%s", w, r.stdout)
		}
	}
	if ev := lastEvent(t, events); ev["event"] != "run_finished" || ev["improved"] != true {
		t.Errorf("last event %v, want run_finished with improved true", ev)
	}
	if _, err := os.Stat(filepath.Join(dir, "optimized_kernel_greedy.py")); err != nil {
		t.Errorf("optimized_kernel_greedy.py: %v", err)
	}
	srv.Close()

	dir2 := cpuKernelDir(t)
	r = run(t, dir2, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfg, "--max-rounds", "1",
		"--llm-replay", rec)
	if r.code != ExitOK {
		t.Fatalf("replayed run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = run(t, dir, "runs", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "finished") || !strings.Contains(r.stdout, "r1c1") {
		t.Fatalf("runs list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := strings.Fields(strings.Split(r.stdout, "\n")[1])[0]
	r = run(t, dir, "runs", "show", id)
	if r.code != 0 || !strings.Contains(r.stdout, "r1c1 *") || !strings.Contains(r.stdout, "six passes over the data") {
		t.Fatalf("runs show: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	oneLineError(t, run(t, dir, "runs", "show", "nope"), ExitUsage, "no run nope")
	if r := run(t, t.TempDir(), "runs", "list"); r.code != 0 || !strings.HasPrefix(r.stdout, "no runs yet") {
		t.Errorf("runs list where nothing ran: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestOptimizeNoImprovementExits3: a run whose only rewrite is slower
// finishes with exit code 3.
func TestOptimizeNoImprovementExits3(t *testing.T) {
	dir := cpuKernelDir(t)
	srv := scriptedServer(t, "slow.py")
	r := run(t, dir, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--strategy", "greedy", "--max-rounds", "1",
		"--llm-provider", "openai", "--llm-base-url", srv.BaseURL(), "--llm-model", "fake")
	if r.code != ExitNoImprovement || !strings.Contains(r.stderr, "without a verified improvement") {
		t.Fatalf("exit %d, want %d\n%s\n%s", r.code, ExitNoImprovement, r.stdout, r.stderr)
	}
}

// TestOptimizeDryRunPrompts: the noop dry run renders every prompt, and asks
// the LLM only when one is configured.
func TestOptimizeDryRunPrompts(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := run(t, repoRoot(t), "optimize", "--kernel-dir", "examples/rmsnorm", "--strategy", "noop", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "none sent") {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"diagnose", "optimize", "refine", "reflect"} {
		p := filepath.Join(out, "round001", "cand1", f+".prompt.md")
		b, err := os.ReadFile(p)
		if err != nil || f != "reflect" && !strings.Contains(string(b), "_rmsnorm_two_pass") {
			t.Errorf("%s: %v (the prompt must carry the kernel)", p, err)
		}
		if _, err := os.Stat(filepath.Join(out, "round001", "cand1", f+".reply.md")); err == nil {
			t.Errorf("%s was sent with no LLM configured", f)
		}
	}
	srv := llmtest.NewServer(t)
	srv.On("# Task: diagnose", llmtest.Reply{Text: `{"bottlenecks": [{"category": "memory", "summary": "x is read twice"}]}`})
	srv.On("# Task: make this", llmtest.Reply{Text: "```python\nimport triton\n```"})
	out = filepath.Join(t.TempDir(), "run")
	r = run(t, repoRoot(t), "optimize", "--kernel-dir", "examples/rmsnorm", "--strategy", "noop", "--out", out,
		"--llm-provider", "openai", "--llm-base-url", srv.BaseURL(), "--llm-model", "fake")
	if r.code != 0 || srv.Count() != 2 {
		t.Fatalf("exit %d, %d llm calls (want 2): %s %s", r.code, srv.Count(), r.stdout, r.stderr)
	}
	b, _ := os.ReadFile(filepath.Join(out, "round001", "cand1", "optimize.prompt.md"))
	if !strings.Contains(string(b), "x is read twice") {
		t.Errorf("the optimize prompt does not carry the diagnosed bottleneck")
	}
}

// TestOptimizeInterruptThenResume: SIGINT in the middle of round 1 leaves
// the run interrupted (exit 130, with the resume command); --resume
// finishes it with the configuration it started with.
func TestOptimizeInterruptThenResume(t *testing.T) {
	dir := cpuKernelDir(t)
	slow := llmtest.NewServer(t)
	slow.On("# Task: diagnose", llmtest.Reply{Text: `{"bottlenecks": [{"category": "memory", "summary": "six passes over the data"}]}`})
	// The rewrite is held until the run gives up on it.
	slow.On("# Task: make this Triton kernel faster", llmtest.Reply{Text: testKernel(t, "fast.py"), Delay: time.Hour})
	events := filepath.Join(t.TempDir(), "events.jsonl")
	cfg := writeConfig(t, "strategy: greedy\n"+promoteRealGains)
	cmd := exec.Command(binary, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfg, "--max-rounds", "1",
		"--llm-provider", "openai", "--llm-base-url", slow.BaseURL(), "--llm-model", "fake", "--events", events)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KAGENT_CACHE_DIR="+t.TempDir())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() }) // a test stuck below
	// The diagnosis, then the rewrite that hangs. On a loaded machine the
	// worker's start, the verification and the timings before them take
	// minutes: the wait's bound is a guard, not a timing assertion.
	proctest.Wait(t, "the run never asked for the rewrite", func() bool { return slow.Count() >= 2 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	werr := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(werr, &ee) || ee.ExitCode() != ExitInterrupted || !strings.Contains(stderr.String(), "--resume") {
		t.Fatalf("after SIGINT: %v\n%s", werr, stderr.String())
	}
	r := run(t, dir, "runs", "list")
	fields := strings.Fields(strings.Split(r.stdout, "\n")[1])
	if fields[1] != "interrupted" {
		t.Fatalf("runs list after SIGINT:\n%s", r.stdout)
	}
	fast := scriptedServer(t, "fast.py")
	// The run judges against the problem it started with: a changed
	// problem.py is refused, the original resumes.
	problem := filepath.Join(dir, "problem.py")
	orig, err := os.ReadFile(problem)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(problem, append(orig, []byte("\n# changed\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	oneLineError(t, run(t, dir, "optimize", "--kernel-dir", ".", "--resume", fields[0], "--llm-base-url", fast.BaseURL()),
		ExitUsage, "cannot be resumed", "problem.py changed since the run started")
	if err := os.WriteFile(problem, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, dir, "optimize", "--kernel-dir", ".", "--resume", fields[0], "--llm-base-url", fast.BaseURL())
	if r.code != ExitOK || !strings.Contains(r.stdout, "resumed") {
		t.Fatalf("resume: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if fast.Count() == 0 {
		t.Errorf("the resumed run asked nothing of the new server")
	}
	oneLineError(t, run(t, dir, "optimize", "--kernel-dir", ".", "--resume", fields[0]), ExitUsage, "cannot be resumed", "finished")
}

// TestKeysNeverWritten runs a whole optimization with LLM keys and other
// secrets in the environment and debug logging on, recording the LLM
// traffic, and checks that no secret value appears in any file the run
// wrote (run dir, history database, transcript, events) or in its output.
//
// The run must finish, not find an improvement: whether fast.py beats the
// timing noise of a busy machine is not this test's question, and a run
// that ends without one (exit 3) has written its files all the same. Its
// configuration lets a real gain through as a rule (promoteRealGains), so
// that the promotion's files are scanned too.
func TestKeysNeverWritten(t *testing.T) {
	dir := cpuKernelDir(t)
	secrets := map[string]string{
		"OPENAI_API_KEY":        "sk-kagent-scan-openai-7f3a9c",
		"ANTHROPIC_API_KEY":     "sk-ant-kagent-scan-41d2",
		"AWS_SECRET_ACCESS_KEY": "kagent-scan-aws-secret-99",
		"HF_TOKEN":              "hf_kagentscan0123",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	srv := scriptedServer(t, "fast.py")
	rec := filepath.Join(t.TempDir(), "transcript")
	events := filepath.Join(t.TempDir(), "events.jsonl")
	cfg := filepath.Join(t.TempDir(), "ci.yaml")
	yaml := "strategy: greedy\nmax_rounds: 1\n" + promoteRealGains + "llm:\n  provider: openai\n  base_url: " + srv.BaseURL() +
		"\n  model: fake\n  api_key_env: OPENAI_API_KEY\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "--log-level", "debug", "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfg,
		"--llm-record", rec, "--events", events)
	if r.code != ExitOK && r.code != ExitNoImprovement {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r.code == ExitNoImprovement {
		t.Logf("the run found no improvement: the promotion's files were not scanned\n%s", r.stderr)
	}
	if srv.Count() == 0 {
		t.Fatal("the fake LLM was never called")
	}
	if reqs := srv.Requests(); !strings.Contains(reqs[0].Authorization, secrets["OPENAI_API_KEY"]) {
		t.Fatalf("the key was not in use (Authorization %q), so the scan proves nothing", reqs[0].Authorization)
	}
	scanned := 0
	check := func(name string, data []byte) {
		scanned++
		for k, v := range secrets {
			if strings.Contains(string(data), v) {
				t.Errorf("%s holds the value of %s", name, k)
			}
		}
	}
	check("stdout", []byte(r.stdout))
	check("stderr", []byte(r.stderr))
	for _, root := range []string{dir, rec, events} {
		err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			check(p, b)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if scanned < 10 {
		t.Fatalf("only %d files scanned: the run wrote less than expected", scanned)
	}
}

// TestTemplatesReachThePrompts: a config's templates: map (paths relative to
// the config file, KernelAgent names accepted) replaces the embedded
// templates in a run's prompts; a missing file is a one-line usage error; the
// KernelAgent keys kagent does not act on are named on stderr.
func TestTemplatesReachThePrompts(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "opt.j2"), []byte("OVERRIDE-MARK {{ kernel }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "kagent.yaml")
	if err := os.WriteFile(cfg, []byte("strategy: noop\nplatform: noop\nsol_improvement_threshold: 0.1\ntemplates:\n  kernel_optimization: opt.j2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	r := run(t, repoRoot(t), "optimize", "--kernel-dir", "examples/rmsnorm", "--config", cfg, "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s %s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "round001", "cand1", "optimize.prompt.md"))
	if err != nil || !strings.Contains(string(b), "OVERRIDE-MARK") || !strings.Contains(string(b), "_rmsnorm_two_pass") {
		t.Errorf("the optimize prompt does not come from the override (%v):\n%.300s", err, b)
	}
	if !strings.Contains(r.stderr, "sol_improvement_threshold is ignored") {
		t.Errorf("no warning for an ignored KernelAgent key: %q", r.stderr)
	}
	if err := os.WriteFile(cfg, []byte("strategy: noop\nplatform: noop\ntemplates:\n  kernel_optimization: missing.j2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, repoRoot(t), "optimize", "--kernel-dir", "examples/rmsnorm", "--config", cfg, "--out", filepath.Join(t.TempDir(), "run"))
	oneLineError(t, r, ExitUsage, "templates:", "missing.j2")
}

// TestUnreachableLLMStopsTheRun: the first LLM call that gives up on a
// refused connection stops the run with one line naming the provider and
// the URL and exit code 4; the run is recorded as failed with that reason.
func TestUnreachableLLMStopsTheRun(t *testing.T) {
	dir := cpuKernelDir(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String() + "/v1"
	ln.Close() // nothing listens there now
	cfg := writeConfig(t, "strategy: greedy\nmax_rounds: 3\nllm:\n  provider: openai\n  model: fake\n  max_retries: 1\n  base_url: "+url+"\n")
	r := run(t, dir, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfg, "--log-level", "error")
	oneLineError(t, r, ExitUnavailable, "llm provider openai at "+url+" cannot be reached")
	l := run(t, dir, "runs", "list", "--json")
	if l.code != 0 || !strings.Contains(l.stdout, `"status": "failed"`) || !strings.Contains(l.stdout, "cannot be reached") {
		t.Errorf("the run is not recorded as failed on the unreachable provider:\n%s%s", l.stdout, l.stderr)
	}
}

// TestPlatformConfigCarriesTheRunsSettings: what a platform is opened with
// comes from the run's configuration (profile_metrics included).
func TestPlatformConfigCarriesTheRunsSettings(t *testing.T) {
	cfg := configs.Default()
	cfg.NCUBinPath, cfg.ProfileMetrics, cfg.BenchmarkRepeat = "/opt/ncu", configs.ProfileMetricsRoofline, 250
	pc := platformConfig(cfg, nil)
	if pc.NCUPath != "/opt/ncu" || pc.NCUMetrics != configs.ProfileMetricsRoofline || pc.RepMS != 250 {
		t.Errorf("platform config %+v", pc)
	}
}
