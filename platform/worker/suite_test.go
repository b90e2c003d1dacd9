package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/internal/pythontest"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// suiteEntry is one case of testdata/suite.json.
type suiteEntry struct {
	Name      string            `json:"name"`
	Problem   string            `json:"problem"`
	Candidate string            `json:"candidate"`
	Platform  string            `json:"platform"`
	Options   kerneldir.Options `json:"options"`
	Expect    string            `json:"expect"`
	// Interpreter is a cuda case's expectation when its Triton kernel runs
	// on the CPU through Triton's interpreter, where it differs from Expect
	// ("skip": the case means nothing there, e.g. a CUDA error).
	Interpreter     string `json:"interpreter,omitempty"`
	InterpreterNote string `json:"interpreter_note,omitempty"`
	Note            string `json:"note,omitempty"`
}

func loadSuite(t *testing.T) []suiteEntry {
	t.Helper()
	b, err := os.ReadFile("testdata/suite.json")
	if err != nil {
		t.Fatalf("read suite: %v", err)
	}
	var entries []suiteEntry
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatalf("parse suite: %v", err)
	}
	return entries
}

// suitePlatform is the platform whose entries run: cpu unless
// KAGENT_SUITE_PLATFORM says otherwise (cuda on the GPU machine).
func suitePlatform() string {
	if p := os.Getenv("KAGENT_SUITE_PLATFORM"); p != "" {
		return p
	}
	return "cpu"
}

// TestSuite drives the real Python worker over the adversarial and fault
// suites: each cheat must be rejected by the named check, each fault must be
// survived, and the next candidate must then be evaluated normally.
func TestSuite(t *testing.T) {
	runSuite(t, suitePlatform())
}

// TestSuiteInterpreter runs the cuda suite's real Triton kernels on the CPU
// through Triton's interpreter (the cpu platform with Triton required), each
// with its interpreter expectation where it has one.
func TestSuiteInterpreter(t *testing.T) {
	if suitePlatform() == "cuda" {
		t.Skip("the GPU machine runs the cuda suite itself")
	}
	pythontest.Triton(t)
	runSuite(t, "interpreter")
}

// runSuite runs the suite's entries of one platform: cpu (plain torch
// candidates, Triton not required), cuda (the GPU) or interpreter (the cuda
// entries on the CPU through Triton's interpreter).
func runSuite(t *testing.T, plat string) {
	if testing.Short() {
		t.Skip("suite runs the real harness")
	}
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	entries := loadSuite(t)
	type group struct {
		key     string
		entries []suiteEntry
	}
	groups := map[string]*group{}
	var keys []string
	for _, e := range entries {
		switch {
		case plat == "interpreter" && e.Platform == "cuda":
			if e.Interpreter == "skip" {
				continue
			}
			if e.Interpreter != "" {
				e.Expect = e.Interpreter
			}
		case e.Platform != plat:
			continue
		}
		ob, _ := json.Marshal(e.Options)
		key := e.Problem + " " + string(ob)
		if groups[key] == nil {
			groups[key] = &group{key: key}
			keys = append(keys, key)
		}
		groups[key].entries = append(groups[key].entries, e)
	}
	if len(keys) == 0 {
		t.Fatalf("suite has no %s entries", plat)
	}
	sort.Strings(keys)
	cache := t.TempDir()
	var table []string
	for _, k := range keys {
		g := groups[k]
		first := g.entries[0]
		var control string
		for _, e := range g.entries {
			if e.Expect == "pass" {
				control = e.Candidate
				break
			}
		}
		abs, _ := filepath.Abs(filepath.Join("testdata", first.Problem))
		task := &kerneldir.Task{Dir: abs, ProblemPath: filepath.Join(abs, "problem.py"), Options: first.Options}
		device := "cpu"
		var env []string
		if plat == "cuda" {
			device = "cuda"
		} else {
			env = []string{"TRITON_INTERPRET=1", "CUDA_VISIBLE_DEVICES="}
		}
		triton := plat != "cpu" // the cpu suite's candidates are plain torch
		// The cpu suite's fault_infinite_loop needs the verify timeout short;
		// under the interpreter (whose hang case is skipped) it is a hang guard.
		verifyTimeout := 20 * time.Second
		if plat == "interpreter" {
			verifyTimeout = 3 * time.Minute
		}
		sess, err := OpenSession(context.Background(), task, SessionConfig{
			Python: py, Device: device, Spare: true, Isolate: true, CacheDir: cache, Env: env,
			Engine: EngineOptions{
				VerifyTimeout: verifyTimeout, BenchTimeout: 3 * time.Minute, LoadTimeout: 5 * time.Minute,
				RequireTriton: triton, Representative: plat == "cuda", WarmupMS: 5, RepMS: 20,
			},
		})
		if err != nil {
			t.Fatalf("%s: open session: %v", first.Problem, err)
		}
		for _, e := range g.entries {
			t.Run(e.Name, func(t *testing.T) {
				cand, _ := filepath.Abs(filepath.Join("testdata", e.Candidate))
				start := time.Now()
				v, err := sess.Verify(context.Background(), platform.Candidate{ID: e.Name, Path: cand})
				took := time.Since(start)
				if err != nil {
					t.Fatalf("verify: %v", err)
				}
				got := "pass"
				if !v.Passed {
					got = v.Failure
				}
				table = append(table, fmt.Sprintf("%-40s %-28s %-22s %6.2fs  %s", e.Name, e.Expect, got, took.Seconds(), v.Reason))
				switch {
				case strings.HasPrefix(e.Expect, "time:"):
					// Verification passes; a check run while timing rejects it.
					want := strings.TrimPrefix(e.Expect, "time:")
					if !v.Passed {
						t.Fatalf("rejected at verification by %s (%s); want a pass, then %s while timed", v.Failure, v.Reason, want)
					}
					_, err := sess.Time(context.Background(), platform.Target{Kind: platform.TargetKernel, Candidate: platform.Candidate{ID: e.Name, Path: cand}})
					var re *RecheckError
					if !errors.As(err, &re) || re.Check != want {
						t.Fatalf("timing: %v; want the %s check to fail", err, want)
					}
					if strings.TrimSpace(re.Reason) == "" || strings.Contains(re.Reason, "\n") {
						t.Errorf("reason must be one non-empty line: %q", re.Reason)
					}
					table[len(table)-1] += " | timed: " + re.Check + ": " + re.Reason
				case e.Expect == "pass":
					if !v.Passed {
						t.Fatalf("correct candidate rejected: %s: %s", v.Failure, v.Reason)
					}
					tm, err := sess.Time(context.Background(), platform.Target{Kind: platform.TargetKernel, Candidate: platform.Candidate{ID: e.Name, Path: cand}})
					if err != nil || tm.N < 1 {
						t.Fatalf("timing a correct candidate: %+v %v", tm, err)
					}
					if !(tm.HostMS > 0) {
						t.Errorf("timing a correct candidate: no host time per call: %+v", tm)
					}
				default:
					_, want, _ := strings.Cut(e.Expect, ":")
					if v.Passed {
						t.Fatalf("cheat/fault passed; want %s", e.Expect)
					}
					// "a|b": either (the first failing check depends on the
					// judge's random choice of buffers).
					if !slices.Contains(strings.Split(want, "|"), v.Failure) {
						t.Errorf("rejected by %q (%s), want %q", v.Failure, v.Reason, want)
					}
					if strings.TrimSpace(v.Reason) == "" || strings.Contains(v.Reason, "\n") {
						t.Errorf("reason must be one non-empty line: %q", v.Reason)
					}
					// The worker survived: a correct candidate still passes.
					if control != "" {
						cp, _ := filepath.Abs(filepath.Join("testdata", control))
						cv, err := sess.Verify(context.Background(), platform.Candidate{ID: "control", Path: cp})
						if err != nil || !cv.Passed {
							t.Fatalf("after %s, the control candidate failed: %+v %v", e.Name, cv, err)
						}
					}
				}
			})
		}
		sess.Close()
	}
	t.Logf("\n%-40s %-28s %-22s %7s  %s\n%s", "CASE", "EXPECT", "GOT", "TIME", "REASON", strings.Join(table, "\n"))
}
