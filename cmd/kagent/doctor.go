package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/harness"
	"github.com/kagent-kernels/kagent/internal/sandbox"
	"github.com/kagent-kernels/kagent/internal/termtext"
	"github.com/kagent-kernels/kagent/platform"
	ncuprof "github.com/kagent-kernels/kagent/profiler/ncu"
)

// llmKeyVars are the variables doctor reports as set or not (never their values).
var llmKeyVars = []string{
	"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GOOGLE_API_KEY", "GEMINI_API_KEY",
	"OPENROUTER_API_KEY", "AWS_ACCESS_KEY_ID", "AWS_PROFILE",
}

// pythonProbe is kagent_harness/probe.py's report.
type pythonProbe struct {
	Python     string  `json:"python"`
	Executable string  `json:"executable"`
	Torch      *string `json:"torch"`
	Triton     *string `json:"triton"`
	Backend    *string `json:"backend"`
	// Interpreter is a small Triton kernel run on CPU tensors through
	// TRITON_INTERPRET=1 (nil when torch or triton is missing).
	Interpreter *struct {
		OK     bool   `json:"ok"`
		Detail string `json:"detail"`
	} `json:"interpreter"`
	Errors  []string `json:"errors"`
	Devices []struct {
		Index       int    `json:"index"`
		Name        string `json:"name"`
		TotalMemory int64  `json:"total_memory"`
		Capability  string `json:"capability"`
	} `json:"devices"`
}

func doctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "report what this machine offers kagent: Python, torch, triton, GPUs, profilers, LLM keys",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "python", Usage: "Python interpreter to inspect (default: $KAGENT_PYTHON or python3)"},
			jsonFlag(),
		},
		Action: func(c *cli.Context) error {
			ctx := c.Context
			var t checks
			py := c.String("python")
			if py == "" {
				py = defaultPython()
			}
			pyPath, err := exec.LookPath(py)
			if err != nil {
				t.row("python", "missing", py+" not found: install Python 3 with torch or set KAGENT_PYTHON")
			} else {
				probe, err := runProbe(ctx, pyPath)
				switch {
				case err != nil:
					t.row("python", "error", err.Error())
				default:
					t.row("python", "ok", fmt.Sprintf("%s (%s)", probe.Executable, probe.Python))
					t.row("torch", status(probe.Torch != nil), orText(probe.Torch, "not importable: install torch for this interpreter"))
					backend := ""
					if probe.Backend != nil {
						backend = " (" + *probe.Backend + ")"
					}
					if probe.Torch != nil {
						t.row("torch backend", status(probe.Backend != nil), strings.TrimSpace(strings.Trim(backend, " ()")+" "+onlyIf(probe.Backend == nil, "CPU-only build")))
					}
					t.row("triton", status(probe.Triton != nil), orText(probe.Triton, "not importable: every platform that runs Triton kernels needs it (pip install -r requirements.txt)"))
					t.row(cpuPlatformRow(probe))
					if len(probe.Devices) == 0 {
						t.row("gpus (torch)", "none", "torch sees no GPU")
					}
					for _, d := range probe.Devices {
						t.row(fmt.Sprintf("gpu %d (torch)", d.Index), "ok", fmt.Sprintf("%s, %.1f GiB, capability %s", d.Name, float64(d.TotalMemory)/(1<<30), d.Capability))
					}
					for _, e := range probe.Errors {
						t.row("python import", "error", e)
					}
				}
			}
			nvsmi := toolLine(ctx, "nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader")
			t.row("nvidia-smi", nvsmi.status, nvsmi.detail)
			roc := toolLine(ctx, "rocminfo")
			if roc.status == "ok" {
				roc.detail = marketingNames(roc.full)
			}
			t.row("rocminfo", roc.status, roc.detail)
			ncu := toolLine(ctx, "ncu", "--version")
			t.row("ncu", ncu.status, ncu.detail)
			rp := toolLine(ctx, "rocprofv3", "--version")
			t.row("rocprofv3", rp.status, rp.detail)
			t.row(sandboxRow(sandbox.Probe()))
			if ncu.status == "ok" {
				t.row(ncuSandboxRow(harness.CacheDir()))
			}
			if name, err := platform.Detect(platform.SystemProbe()); err == nil {
				t.row("platform", "ok", name+" (auto-detected)")
			} else {
				t.row("platform", "none", "no GPU stack found: --platform cpu runs on the CPU, --strategy noop is a dry run")
			}
			var set, unset []string
			for _, k := range llmKeyVars {
				if os.Getenv(k) != "" {
					set = append(set, k)
				} else {
					unset = append(unset, k)
				}
			}
			t.row("llm keys", status(len(set) > 0), fmt.Sprintf("set: %s; not set: %s", orNone(set), orNone(unset)))
			t.row("cache", "ok", harness.CacheDir())
			if c.Bool("json") {
				return writeJSON(c.App.Writer, t)
			}
			w := newTable(c.App.Writer)
			w.row("CHECK", "STATUS", "DETAIL")
			for _, r := range t {
				w.row(r.Check, r.Status, r.Detail)
			}
			return w.flush()
		},
	}
}

// check is one line of doctor's report; --json prints the list.
type check struct {
	Check  string `json:"check"`  // python, torch, triton, nvidia-smi, sandbox, llm keys, ...
	Status string `json:"status"` // ok, missing, none, limited, unavailable or error
	Detail string `json:"detail"`
}

type checks []check

func (cs *checks) row(name, status, detail string) {
	*cs = append(*cs, check{Check: name, Status: status, Detail: detail})
}

// sandboxRow says whether candidates can run in kagent's OS sandbox here.
func sandboxRow(r sandbox.Report) (string, string, string) {
	if !r.Available {
		return "sandbox", "unavailable", r.Reason + "; candidates can run only unsandboxed, by explicit opt-in"
	}
	return "sandbox", "ok", r.String()
}

// ncuSandboxRow says where ncu's profiles run on this machine, as the last
// probe kept in kagent's cache found (platform/cuda).
func ncuSandboxRow(cache string) (string, string, string) {
	const name = "ncu sandbox"
	v, ok := ncuprof.LatestSandboxVerdict(cache)
	switch {
	case !ok:
		return name, "unknown", "not probed yet: a run's first profile probes whether ncu works in the runners' sandbox (platform_kwargs.ncu_sandbox)"
	case v.OK:
		return name, "ok", "ncu profiled kagent's probe in the runners' sandbox (checked " + v.Checked + "): profiles run there"
	default:
		return name, "outside", termtext.Line(v.Reason) + " (checked " + v.Checked + "): profiles run outside the sandbox, " +
			"with a scrubbed environment (probed again after a day; platform_kwargs.ncu_sandbox: on keeps them inside)"
	}
}

// cpuPlatformRow says whether the cpu platform can run Triton kernels here.
func cpuPlatformRow(p pythonProbe) (string, string, string) {
	const name = "cpu platform"
	switch {
	case p.Torch == nil:
		return name, "missing", "needs torch"
	case p.Triton == nil:
		return name, "limited", "without triton it runs only kernels written in plain torch (platform_kwargs.triton=off); Triton kernels need triton (its interpreter runs them on the CPU)"
	case p.Interpreter == nil || !p.Interpreter.OK:
		detail := "not checked"
		if p.Interpreter != nil {
			detail = p.Interpreter.Detail
		}
		fix := "reinstall the pinned stack: pip install -r requirements.txt"
		if strings.Contains(detail, "0-dimensional arrays") {
			fix = "Triton 3.6's interpreter needs numpy < 2.4: pip install 'numpy<2.4'"
		}
		return name, "error", "Triton's interpreter failed a small kernel on the CPU: " + detail + "; " + fix
	}
	return name, "ok", "Triton kernels run on CPU tensors through Triton's interpreter (TRITON_INTERPRET=1); times are not representative of a GPU"
}

func defaultPython() string {
	if p := os.Getenv("KAGENT_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

func runProbe(ctx context.Context, py string) (pythonProbe, error) {
	var p pythonProbe
	err := harness.Script{Name: "probe.py", Python: py, Timeout: 2 * time.Minute}.JSON(ctx, &p)
	return p, err
}

type toolResult struct{ status, detail, full string }

// toolLine runs a tool briefly and returns its first output line.
func toolLine(ctx context.Context, name string, args ...string) toolResult {
	path, err := exec.LookPath(name)
	if err != nil {
		return toolResult{status: "missing", detail: "not on PATH"}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	text := strings.TrimSpace(string(out))
	if err != nil {
		return toolResult{status: "error", detail: fmt.Sprintf("%s: %v %s", path, err, firstLine(text)), full: text}
	}
	lines := strings.Split(text, "\n")
	detail := strings.TrimSpace(lines[len(lines)-1])
	if name == "nvidia-smi" {
		detail = strings.Join(lines, " | ")
	}
	return toolResult{status: "ok", detail: path + ": " + detail, full: text}
}

func marketingNames(rocminfo string) string {
	var names []string
	for _, l := range strings.Split(rocminfo, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Marketing Name:"); ok {
			names = append(names, strings.TrimSpace(v))
		}
	}
	return strings.Join(names, ", ")
}

func status(ok bool) string {
	if ok {
		return "ok"
	}
	return "missing"
}

func orText(s *string, alt string) string {
	if s != nil {
		return *s
	}
	return alt
}

func onlyIf(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, ", ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
