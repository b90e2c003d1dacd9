package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/pythontest"
)

// KnownEscapes lists the adversarial cases (platform/worker/testdata/adversarial)
// that the current code does not stop on the cpu platform, each with why.
// TestAdversarial fails when a case not listed here escapes, and when a listed
// case is stopped: remove it from the list when a fix lands. Every case is
// run on the code with candidates in sandboxed runner processes; none
// escapes on the cpu platform.
var KnownEscapes = map[string]string{}

// advCase is one case folder, described by the "# key: value" header of its input.py.
type advCase struct {
	Name      string
	Dir       string
	Class     string // "1".."5" or "control"
	Technique string
	Problem   string
	Expect    []string   // reject, time, contain, pass
	Setup     [][]string // setup directives (fifo, symlink, sparse, hostfile, unixsock, tcp)
	LimitAS   string     // ulimit -v for kagent (KiB), for cases that would exhaust memory
}

func (c advCase) expects(e string) bool {
	for _, x := range c.Expect {
		if x == e {
			return true
		}
	}
	return false
}

// advResult is what one case did.
type advResult struct {
	Case      advCase
	Passed    bool
	Verdict   string // "PASSED" or the FAILED line, or the one-line error
	KernelMS  float64
	EagerMS   float64
	Escapes   []string // contain violations and expectation failures
	ExitCode  int
	Duration  time.Duration
	Stdout    string
	Stderr    string
	RunFailed string // the suite itself could not run the case
	// WorkerDirs are kagent-worker-* folders left in TMPDIR: they come and go
	// with timing, so they are judged over the whole suite (workerDirsLeak).
	WorkerDirs []string
}

// workerDirsLeak: kagent leaves kagent-worker-* folders in TMPDIR after some
// evals (a race of the pool's shutdown; issue 14). While true, the suite only
// reports them; when it is fixed, set it false and any such folder fails the
// case. With it true, a whole suite run without one fails (the list must
// shrink as fixes land).
const workerDirsLeak = false

func advRoot(t *testing.T) string {
	return filepath.Join(repoRoot(t), "platform", "worker", "testdata", "adversarial")
}

func loadAdvCases(t *testing.T) []advCase {
	t.Helper()
	root := filepath.Join(advRoot(t), "cases")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var cases []advCase
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(root, e.Name())
		src, err := os.ReadFile(filepath.Join(dir, "input.py"))
		if err != nil {
			t.Fatalf("case %s: %v", e.Name(), err)
		}
		c := advCase{Name: e.Name(), Dir: dir}
		for _, line := range strings.Split(string(src), "\n") {
			if !strings.HasPrefix(line, "# ") {
				break
			}
			key, val, ok := strings.Cut(strings.TrimPrefix(line, "# "), ":")
			if !ok {
				continue
			}
			val = strings.TrimSpace(val)
			switch key {
			case "adversarial":
				c.Class = strings.TrimSpace(strings.TrimPrefix(val, "class"))
			case "technique":
				c.Technique = val
			case "problem":
				c.Problem = val
			case "expect":
				c.Expect = strings.Fields(val)
			case "setup":
				c.Setup = append(c.Setup, strings.Fields(val))
			case "limit-as":
				c.LimitAS = val
			}
		}
		if c.Class == "" || c.Problem == "" || len(c.Expect) == 0 || c.Technique == "" {
			t.Fatalf("case %s: header lacks adversarial/technique/problem/expect", c.Name)
		}
		cases = append(cases, c)
	}
	return cases
}

// TestAdversarial runs every case of the adversarial suite through
// `kagent eval` (platform from KAGENT_ADV_PLATFORM, default cpu) with a fake
// LLM key in kagent's environment and a TMPDIR of its own, and checks that
// each cheating kernel is rejected and each side effect contained.
// KAGENT_ADV_CASES (a regexp) selects cases, KAGENT_ADV_PARALLEL (default 2)
// runs that many at once, KAGENT_ADV_HANG_S (default 180) is the hang guard;
// KAGENT_ADV_LOGS (a folder) keeps each case's output and its workers'
// stderr, and a hung run's stacks (advlogs_test.go).
func TestAdversarial(t *testing.T) {
	if os.Getenv("KAGENT_ADV") != "1" {
		t.Skip("the adversarial suite takes minutes (7.4 on 2 cores unloaded); KAGENT_ADV=1 (scripts/adversarial.sh, which CI runs after make test) runs it")
	}
	pythontest.Triton(t)
	plat := envOr("KAGENT_ADV_PLATFORM", "cpu")
	strict := plat == "cpu" || os.Getenv("KAGENT_ADV_STRICT") == "1"
	cases := loadAdvCases(t)
	if sel := os.Getenv("KAGENT_ADV_CASES"); sel != "" {
		re := regexp.MustCompile(sel)
		var keep []advCase
		for _, c := range cases {
			if re.MatchString(c.Name) || c.Class == "control" {
				keep = append(keep, c)
			}
		}
		cases = keep
	}
	parallel, _ := strconv.Atoi(envOr("KAGENT_ADV_PARALLEL", "2"))
	hang, _ := strconv.Atoi(envOr("KAGENT_ADV_HANG_S", "180"))
	if parallel < 1 {
		parallel = 1
	}
	// torch.compile's cache is shared by the cases (a cold one costs each
	// case many seconds); what the compile baseline leaves in TMPDIR
	// (torchinductor_USER) is not counted as left behind by kagent.
	inductorDir := t.TempDir()
	results := make([]advResult, len(cases))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, c := range cases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = runAdvCase(t, c, plat, inductorDir, time.Duration(hang)*time.Second)
			r := results[i]
			t.Logf("done %s in %s: passed=%v escapes=%q %s", c.Name, r.Duration.Round(time.Second), r.Passed, r.Escapes, r.RunFailed)
		}()
	}
	wg.Wait()
	judgeTimes(results)

	var table strings.Builder
	fmt.Fprintf(&table, "\n%-34s %-7s %-16s %-9s %s\n", "CASE", "CLASS", "EXPECT", "TIME", "OUTCOME")
	escaped, leaks := 0, 0
	for _, r := range results {
		outcome := "stopped: " + r.Verdict
		if r.Case.Class == "control" {
			outcome = "control: " + r.Verdict
		}
		if len(r.Escapes) > 0 {
			outcome = "ESCAPED: " + strings.Join(r.Escapes, "; ")
			if r.Case.Class != "control" {
				escaped++
			}
		}
		if r.RunFailed != "" {
			outcome = "SUITE ERROR: " + r.RunFailed
		}
		if len(r.WorkerDirs) > 0 {
			outcome += fmt.Sprintf(" [left %d kagent-worker-* folder(s) in TMPDIR]", len(r.WorkerDirs))
			leaks++
		}
		fmt.Fprintf(&table, "%-34s %-7s %-16s %-9s %s\n", r.Case.Name, r.Case.Class, strings.Join(r.Case.Expect, ","),
			r.Duration.Round(time.Second), oneLineOf(outcome, 220))
	}
	fmt.Fprintf(&table, "%d cases (controls excluded: %d), %d escaped, platform %s\n",
		len(results), countControls(results), escaped, plat)
	t.Log(table.String())
	switch {
	case workerDirsLeak && leaks == 0 && len(results) >= 20:
		t.Errorf("no run left kagent-worker-* folders in TMPDIR: set workerDirsLeak to false")
	case !workerDirsLeak && leaks > 0:
		t.Errorf("%d run(s) left kagent-worker-* folders in TMPDIR", leaks)
	}

	for _, r := range results {
		t.Run(r.Case.Name, func(t *testing.T) {
			if r.RunFailed != "" {
				t.Fatalf("the suite could not run the case: %s", r.RunFailed)
			}
			if r.Case.Class == "control" {
				if !r.Passed || len(r.Escapes) > 0 {
					t.Errorf("the honest control kernel did not pass cleanly: %s %v\nstdout:\n%s\nstderr:\n%s", r.Verdict, r.Escapes, r.Stdout, tail(r.Stderr, 4000))
				}
				return
			}
			why, known := KnownEscapes[r.Case.Name]
			switch {
			case len(r.Escapes) > 0 && !known && strict:
				t.Errorf("escaped (class %s, %s): %s\nstdout:\n%s\nstderr:\n%s", r.Case.Class, r.Case.Technique,
					strings.Join(r.Escapes, "; "), r.Stdout, tail(r.Stderr, 2000))
			case len(r.Escapes) == 0 && known && strict:
				t.Errorf("now stopped (%s); remove it from KnownEscapes (%s)", r.Verdict, why)
			}
		})
	}
}

func countControls(rs []advResult) int {
	n := 0
	for _, r := range rs {
		if r.Case.Class == "control" {
			n++
		}
	}
	return len(rs) - n
}

// judgeTimes applies the "time" expectation: a passing kernel that does at
// least its problem's control work must not report less than a quarter of the
// control's time, and the eager baseline must not be 10x slower than in the
// control's run (the times are CPU or device time, not wall time, so the
// machine's load moves them little).
func judgeTimes(rs []advResult) {
	control := map[string]advResult{}
	for _, r := range rs {
		if r.Case.Class == "control" && r.Passed {
			control[r.Case.Problem] = r
		}
	}
	for i := range rs {
		r := &rs[i]
		if !r.Case.expects("time") || !r.Passed {
			continue
		}
		c, ok := control[r.Case.Problem]
		if !ok {
			r.Escapes = append(r.Escapes, "passed, and no control run of problem "+r.Case.Problem+" to compare its time with")
			continue
		}
		if r.KernelMS < 0.25*c.KernelMS {
			r.Escapes = append(r.Escapes, fmt.Sprintf("passed with a forged time: kernel %.4g ms against the honest control's %.4g ms", r.KernelMS, c.KernelMS))
		}
		if r.EagerMS > 10*c.EagerMS {
			r.Escapes = append(r.Escapes, fmt.Sprintf("passed with a slowed baseline: eager %.4g ms against %.4g ms in the control's run", r.EagerMS, c.EagerMS))
		}
	}
}

// runAdvCase builds the case's kernel dir, runs kagent eval on it and checks
// every containment property.
func runAdvCase(t *testing.T, c advCase, plat, inductorDir string, hang time.Duration) (res advResult) {
	res.Case = c
	fail := func(format string, a ...any) advResult {
		res.RunFailed = fmt.Sprintf(format, a...)
		return res
	}
	root, err := os.MkdirTemp("", "kagent-adv-")
	if err != nil {
		return fail("%v", err)
	}
	defer os.RemoveAll(root)
	dirs := map[string]string{}
	for _, d := range []string{"kdir", "outside", "host", "tmp", "cache", "home"} {
		dirs[d] = filepath.Join(root, d)
		if err := os.MkdirAll(dirs[d], 0o755); err != nil {
			return fail("%v", err)
		}
	}
	secret := "sk-adv-" + randHex(12)
	// The key is never written into the kernel dir: only setup lines expand it.
	repl := strings.NewReplacer("@@OUTSIDE@@", dirs["outside"], "@@HOST@@", dirs["host"])

	// The kernel dir: the problem, then the case's files (includes expanded).
	prob, err := os.ReadFile(filepath.Join(advRoot(t), "problems", c.Problem, "problem.py"))
	if err != nil {
		return fail("problem %s: %v", c.Problem, err)
	}
	if err := os.WriteFile(filepath.Join(dirs["kdir"], "problem.py"), prob, 0o644); err != nil {
		return fail("%v", err)
	}
	files, _ := os.ReadDir(c.Dir)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(c.Dir, f.Name()))
		if err != nil {
			return fail("%v", err)
		}
		text, err := expandIncludes(t, string(b))
		if err != nil {
			return fail("%s: %v", f.Name(), err)
		}
		if err := os.WriteFile(filepath.Join(dirs["kdir"], f.Name()), []byte(repl.Replace(text)), 0o644); err != nil {
			return fail("%v", err)
		}
	}
	var conns atomic.Int32
	for _, s := range c.Setup {
		cleanup, err := advSetup(s, dirs, secret, &conns)
		if err != nil {
			return fail("setup %v: %v", s, err)
		}
		if cleanup != nil {
			defer cleanup()
		}
	}
	before := snapshotDir(dirs["kdir"])

	// kagent eval, with a hang guard.
	args := []string{"eval", "--kernel-dir", dirs["kdir"], "--platform", plat}
	argv := append([]string{binary}, args...)
	if c.LimitAS != "" {
		argv = append([]string{"/bin/sh", "-c", `ulimit -v "$0" && exec "$@"`, c.LimitAS}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dirs["kdir"]
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"KAGENT_PYTHON=" + os.Getenv("KAGENT_PYTHON"),
		"KAGENT_PLATFORM_KWARGS=triton=require",
		"KAGENT_CACHE_DIR=" + dirs["cache"],
		"TORCHINDUCTOR_CACHE_DIR=" + inductorDir,
		"TMPDIR=" + dirs["tmp"],
		"HOME=" + dirs["home"],
		"OPENAI_API_KEY=" + secret,
		"LANG=C.UTF-8",
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") || strings.HasPrefix(kv, "GOCOVERDIR=") ||
			slices.ContainsFunc(advDiagEnv, func(p string) bool { return strings.HasPrefix(kv, p) }) {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	logs := advLogsDir(c.Name)
	if logs != "" {
		cmd.Env = append(cmd.Env, "KAGENT_WORKER_STDERR="+logs)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return fail("start kagent: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	hung := false
	select {
	case err = <-waited:
	case <-ctx.Done():
		hung = true
		pid := cmd.Process.Pid
		if logs != "" {
			dumpStacks(pid)
		}
		_ = syscall.Kill(-pid, syscall.SIGCONT)
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		err = <-waited
	}
	res.Duration = time.Since(start)
	res.Stdout, res.Stderr = stdout.String(), stderr.String()
	if logs != "" {
		_ = os.WriteFile(filepath.Join(logs, "kagent.out"), stdout.Bytes(), 0o644)
		_ = os.WriteFile(filepath.Join(logs, "kagent.err"), stderr.Bytes(), 0o644)
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && !hung {
			res.Escapes = append(res.Escapes, "kagent was killed by signal "+ws.Signal().String())
		}
	default:
		return fail("wait kagent: %v", err)
	}
	if hung {
		res.Escapes = append(res.Escapes, fmt.Sprintf("kagent hung past the %s guard", hang))
	}
	time.Sleep(time.Second) // children that outlive kagent get a moment to show
	res.Passed = res.ExitCode == 0 && !hung && strings.Contains(res.Stdout, "verify:   PASSED")
	res.Verdict = verdictLine(res)
	res.KernelMS, res.EagerMS = tableMedian(res.Stdout, "input"), tableMedian(res.Stdout, "eager")
	if res.Passed && c.expects("reject") {
		res.Escapes = append(res.Escapes, "the cheating kernel was reported as passed")
	}

	// Containment.
	out := res.Stdout + res.Stderr
	if strings.Contains(out, "panic:") || strings.Contains(out, "fatal error:") {
		res.Escapes = append(res.Escapes, "kagent crashed")
	}
	if strings.Contains(out, secret) {
		res.Escapes = append(res.Escapes, "the LLM key appeared in kagent's output")
	}
	if i := strings.IndexFunc(out, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\t' || r == 0x7f || r == 0x9b }); i >= 0 {
		res.Escapes = append(res.Escapes, fmt.Sprintf("control character %q in kagent's output", out[i]))
	}
	for _, d := range []string{"kdir", "outside", "tmp", "cache", "home", "host"} {
		if f := fileContaining(dirs[d], secret, d == "host"); f != "" {
			res.Escapes = append(res.Escapes, "the LLM key was written to "+strings.TrimPrefix(f, root+"/"))
			break
		}
	}
	if names := listDir(dirs["outside"], ""); len(names) > 0 {
		res.Escapes = append(res.Escapes, "wrote outside the kernel dir: "+strings.Join(names, ", "))
	}
	var left []string
	for _, name := range listDir(dirs["tmp"], "torchinductor_") {
		if strings.HasPrefix(name, "kagent-worker-") {
			res.WorkerDirs = append(res.WorkerDirs, name)
		} else {
			left = append(left, name)
		}
	}
	if len(left) > 0 {
		res.Escapes = append(res.Escapes, "left in TMPDIR: "+strings.Join(left, ", "))
	}
	if diff := diffSnapshots(before, snapshotDir(dirs["kdir"])); diff != "" {
		res.Escapes = append(res.Escapes, "changed the kernel dir: "+diff)
	}
	if f := fileContaining(dirs["cache"], "ADV-TAMPERED", false); f != "" {
		res.Escapes = append(res.Escapes, "changed kagent's cache: "+strings.TrimPrefix(f, root+"/"))
	}
	if n := conns.Load(); n > 0 {
		res.Escapes = append(res.Escapes, fmt.Sprintf("reached a host socket (%d connections)", n))
	}
	if pids := survivors(dirs["tmp"]); len(pids) > 0 {
		res.Escapes = append(res.Escapes, fmt.Sprintf("%d process(es) outlived kagent", len(pids)))
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	return res
}

func verdictLine(r advResult) string {
	for _, l := range strings.Split(r.Stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "verify:   "); ok {
			return oneLineOf(v, 160)
		}
	}
	if s := strings.TrimSpace(r.Stderr); s != "" {
		lines := strings.Split(s, "\n")
		return oneLineOf(fmt.Sprintf("exit %d: %s", r.ExitCode, lines[len(lines)-1]), 160)
	}
	return fmt.Sprintf("exit %d", r.ExitCode)
}

// tableMedian reads a target's median from eval's timing table.
func tableMedian(stdout, target string) float64 {
	for _, l := range strings.Split(stdout, "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && f[0] == target {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				return v
			}
		}
	}
	return 0
}

func oneLineOf(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > n {
		s = s[:n] + "..."
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
