package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kagent-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "kagent")
	// KAGENT_BINARY: a kagent built elsewhere (a GPU machine without Go).
	if prebuilt := os.Getenv("KAGENT_BINARY"); prebuilt != "" {
		binary = prebuilt
	} else if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		panic("build kagent: " + err.Error() + "\n" + string(out))
	}
	// The kernels of these tests are plain torch (the CLI is under test);
	// examples_test.go runs real Triton kernels and sets "triton=auto".
	os.Setenv("KAGENT_PLATFORM_KWARGS", "triton=off")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	code           int
	stdout, stderr string
}

// run executes the real binary in dir with a clean KAGENT_* environment.
func run(t *testing.T, dir string, args ...string) result {
	t.Helper()
	return runEnv(t, dir, nil, args...)
}

// runEnv is run with changes to the environment: "NAME=VALUE" sets a
// variable, "NAME" removes it.
func runEnv(t *testing.T, dir string, changes []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		changed := slices.ContainsFunc(changes, func(c string) bool { return c == name || strings.HasPrefix(c, name+"=") })
		if !changed && (!strings.HasPrefix(kv, "KAGENT_") || strings.HasPrefix(kv, "KAGENT_PYTHON=") || strings.HasPrefix(kv, "KAGENT_PLATFORM_KWARGS=")) {
			env = append(env, kv)
		}
	}
	for _, c := range changes {
		if strings.Contains(c, "=") {
			env = append(env, c)
		}
	}
	cmd.Env = append(env, "KAGENT_CACHE_DIR="+t.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// oneLineError checks the error contract: one line on stderr, the exit code,
// and the words that say what to fix.
func oneLineError(t *testing.T, r result, code int, want ...string) {
	t.Helper()
	if r.code != code {
		t.Errorf("exit code %d, want %d (stderr %q)", r.code, code, r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 1 || !strings.HasPrefix(lines[0], "kagent: ") {
		t.Errorf("stderr is not one kagent: line: %q", r.stderr)
	}
	if strings.Contains(r.stderr, "Traceback") {
		t.Errorf("stderr holds a traceback: %q", r.stderr)
	}
	for _, w := range want {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr %q does not contain %q", r.stderr, w)
		}
	}
}

func TestConfigsList(t *testing.T) {
	r := run(t, t.TempDir(), "configs", "list")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, name := range []string{"greedy", "beam_search", "tune", "noop", "nvidia", "amd", "intel"} {
		if !strings.Contains(r.stdout, "\n"+name+" ") {
			t.Errorf("configs list lacks %s:\n%s", name, r.stdout)
		}
	}
}

func TestConfigsShow(t *testing.T) {
	r := run(t, t.TempDir(), "configs", "show", "amd")
	if r.code != 0 || !strings.Contains(r.stdout, "platform: rocm") || !strings.Contains(r.stdout, "rocprof_bin_path") {
		t.Fatalf("configs show amd: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	oneLineError(t, run(t, t.TempDir(), "configs", "show", "nope"), ExitUsage, `"nope"`, "greedy")
}

func TestOptimizeDryRun(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := run(t, repoRoot(t), "optimize", "--kernel-dir", "examples/rmsnorm", "--strategy", "noop", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "nothing was executed or timed") {
		t.Errorf("dry run does not say nothing ran: %q", r.stdout)
	}
	for _, f := range []string{"plan.md", "plan.json", "config.yaml", "input/problem.py", "input/input.py", "input/kagent.yaml"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run dir lacks %s: %v", f, err)
		}
	}
	plan, _ := os.ReadFile(filepath.Join(out, "plan.md"))
	if !strings.Contains(string(plan), "Nothing was executed or timed") {
		t.Errorf("plan.md does not say nothing ran")
	}
}

func TestOptimizeAMDWithoutROCm(t *testing.T) {
	if _, err := os.Stat("/dev/kfd"); err == nil {
		t.Skip("this machine has ROCm")
	}
	if _, err := exec.LookPath("rocminfo"); err == nil {
		t.Skip("this machine has rocminfo")
	}
	dir := exampleCopy(t, "rmsnorm")
	r := run(t, dir, "optimize", "--kernel-dir", ".", "--strategy", "amd")
	oneLineError(t, r, ExitUnavailable, "rocm", "ROCm not found", "/dev/kfd")
	// A run the machine cannot make leaves nothing in the kernel dir.
	if _, err := os.Stat(filepath.Join(dir, ".kagent")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the failed run left %s/.kagent (%v)", dir, err)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	malformed := write("malformed.yaml", "strategy: greedy\nllm: [oops\n")
	unknown := write("unknown.yaml", "strategy: greedy\nmax_roundz: 3\n")
	kernel := "import triton\n\n@triton.jit\ndef k(x):\n    pass\n\ndef kernel_function(x):\n    return x\n"
	write("noproblem/input.py", kernel)
	write("noinputs/problem.py", "import torch.nn as nn\nclass Model(nn.Module):\n    pass\ndef get_init_inputs():\n    return []\n")
	write("noinputs/input.py", kernel)
	cases := []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"malformed yaml", []string{"optimize", "--kernel-dir", "noinputs", "--config", malformed}, ExitUsage, []string{"malformed.yaml:"}},
		{"unknown key", []string{"optimize", "--kernel-dir", "noinputs", "--config", unknown}, ExitUsage, []string{"unknown.yaml:2:", `unknown key "max_roundz"; did you mean "max_rounds"?`}},
		{"missing problem.py", []string{"optimize", "--kernel-dir", "noproblem", "--strategy", "noop"}, ExitUsage, []string{"noproblem/problem.py not found"}},
		{"problem without get_inputs", []string{"optimize", "--kernel-dir", "noinputs", "--strategy", "noop"}, ExitUsage, []string{"noinputs/problem.py: missing get_inputs()"}},
		{"missing kernel dir flag", []string{"optimize", "--strategy", "noop"}, ExitUsage, []string{"kernel-dir"}},
		{"unknown strategy", []string{"optimize", "--kernel-dir", "noinputs", "--strategy", "fastest"}, ExitUsage, []string{`"fastest"`}},
		{"bad flag value", []string{"optimize", "--kernel-dir", "noinputs", "--strategy", "noop", "--max-rounds", "0"}, ExitUsage, []string{"max_rounds is 0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			oneLineError(t, run(t, dir, tc.args...), tc.code, tc.want...)
		})
	}
}

func TestEnvAndVersion(t *testing.T) {
	r := run(t, t.TempDir(), "env")
	if r.code != 0 || !strings.Contains(r.stdout, "KAGENT_PLATFORM") || !strings.Contains(r.stdout, "KAGENT_LLM_API_KEY_ENV") {
		t.Fatalf("env: %d %s", r.code, r.stdout)
	}
	if r := run(t, t.TempDir(), "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "kagent ") {
		t.Fatalf("version: %+v", r)
	}
}

// TestJSON: --json prints valid JSON with stable snake_case fields: an
// object, or an array of one object per row for a list; every object has
// every field, and the rows a reader looks for are there.
func TestJSON(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args   []string
		list   bool
		fields []string
		// key and value: some object has this field with this value.
		key, value string
	}{
		{[]string{"version", "--json"}, false, []string{"version", "revision", "time", "modified", "go"}, "go", runtime.Version()},
		{[]string{"env", "--json"}, true, []string{"name", "value", "description"}, "name", "KAGENT_LLM_MODEL"},
		{[]string{"configs", "list", "--json"}, true, []string{"name", "strategy", "platform", "source", "description"}, "name", "greedy"},
		{[]string{"configs", "show", "amd", "--json"}, false, []string{"name", "source", "description", "yaml", "config"}, "source", "embedded:strategies/amd.yaml"},
		{[]string{"doctor", "--python", filepath.Join(dir, "no-python"), "--json"}, true, []string{"check", "status", "detail"}, "check", "sandbox"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			r := run(t, dir, tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var objects []map[string]any
			var err error
			if tc.list {
				err = json.Unmarshal([]byte(r.stdout), &objects)
			} else {
				objects = []map[string]any{{}}
				err = json.Unmarshal([]byte(r.stdout), &objects[0])
			}
			if err != nil || len(objects) == 0 {
				t.Fatalf("not a JSON %s (%v):\n%s", map[bool]string{true: "array", false: "object"}[tc.list], err, r.stdout)
			}
			found := false
			for _, o := range objects {
				for _, f := range tc.fields {
					if _, ok := o[f]; !ok {
						t.Errorf("%v lacks %q", o, f)
					}
				}
				found = found || o[tc.key] == tc.value
			}
			if !found {
				t.Errorf("no object with %s %q:\n%s", tc.key, tc.value, r.stdout)
			}
		})
	}
	// configs show: the config the file makes, under the YAML's keys.
	r := run(t, dir, "configs", "show", "amd", "--json")
	var show struct {
		Config struct {
			MaxRounds int    `json:"max_rounds"`
			Platform  string `json:"platform"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &show); err != nil || show.Config.MaxRounds != 8 || show.Config.Platform != "rocm" {
		t.Errorf("configs show amd --json: config %+v (%v)", show.Config, err)
	}
}

func TestDoctorNeverPrintsKeys(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-doctor-test-secret")
	r := run(t, t.TempDir(), "doctor")
	if r.code != 0 {
		t.Fatalf("doctor exit %d: %s", r.code, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "sk-doctor-test-secret") {
		t.Fatal("doctor printed a key value")
	}
	for _, w := range []string{"python", "torch", "triton", "nvidia-smi", "ncu", "rocprofv3", "OPENAI_API_KEY", "sandbox"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("doctor output lacks %q:\n%s", w, r.stdout)
		}
	}
}
