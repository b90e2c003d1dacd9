package ncu

import (
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/flosch/pongo2/v6"
)

//go:embed wrapper.py.tmpl
var templateFS embed.FS

// templates is a private set, so this package neither shares a cache with
// nor changes the global autoescape setting of other pongo2 users; the
// template turns autoescaping off itself ({% autoescape off %}), as paths
// and names may contain '<' and '&'.
var templates = pongo2.NewSet("ncu", pongo2.NewFSLoader(templateFS))

var wrapperTpl = pongo2.Must(templates.FromFile("wrapper.py.tmpl"))

// Wrapper describes the script ncu runs. It uses the harness
// (kagent_harness) the way the verifying worker does: loading.load_for_profile
// with a load request (problem path, dtype, seeds, TF32 policy, shape
// override) builds the chosen shape set with its first draw only (no
// reference outputs), then candidate.import_candidate, find_entry and
// Candidate.callable_for give the call to profile.
type Wrapper struct {
	// HarnessDir is the directory that holds the kagent_harness package.
	HarnessDir    string
	ProblemPath   string
	CandidatePath string
	// Entry is "ModelNew" or "kernel_function" ("" = whichever the file defines).
	Entry string
	// DType is "fp32", "fp16", "bf16" or "" (the problem's own dtypes).
	DType string
	// Seeds of the input draws (the harness wants at least 3; the first
	// draw is profiled). nil = 1, 2, 3.
	Seeds []int64
	// TF32 is the policy, "allow" or "forbid" ("" = forbid, the harness's default).
	TF32 string
	// ShapeOverride replaces the problem's module-level size constants of
	// the timed shape, as the worker's load request's size does (nil = the
	// problem's own): the profile must measure the size that was timed.
	ShapeOverride map[string]any
	Device        string // "cuda"
	// Warmup is the number of calls before the profiled one (at least 1).
	Warmup int
	// JobFile, when set, starts the script ahead of its profile: it imports
	// torch, Triton and the harness, touches no GPU, and waits for JobFile
	// (a JSON object with candidate_path and entry, written whole) for at
	// most IdleSeconds (0 = 600) before exiting with status 3.
	// CandidatePath and Entry are then ignored. A job with go_file is
	// staged: loaded and warmed up at once, its profiled call waits (as
	// long again at most) for go_file to exist; one that is also light
	// makes only its device context before go_file.
	JobFile     string
	IdleSeconds int
}

// job is the content of a Wrapper's JobFile.
type job struct {
	CandidatePath string `json:"candidate_path"`
	Entry         string `json:"entry"`
	// GoFile, when set, stages the job: the script loads and warms up the
	// candidate at once and runs the profiled call once GoFile exists.
	GoFile string `json:"go_file,omitempty"`
	// Light stages less: the script makes its device context at once and
	// builds the inputs and warms up only once GoFile exists.
	Light bool `json:"light,omitempty"`
}

// defaultIdleSeconds is how long a script started ahead waits for its job.
const defaultIdleSeconds = 600

// idleExitMessage starts the line a script started ahead prints when no
// job came, or no go file after a staged job.
const idleExitMessage = "kagent: no profile "

// phasesLine matches the line the wrapper prints last: the seconds of its
// loading, its warm-up and its profiled call (ncu's replay passes are in the
// last).
var phasesLine = regexp.MustCompile(`^kagent: profile phases: (.*)$`)

// loadRequest is the harness's load_problem request (PROTOCOL.md).
type loadRequest struct {
	ProblemPath string           `json:"problem_path"`
	DType       string           `json:"dtype"`
	Seeds       []int64          `json:"seeds"`
	TF32        string           `json:"tf32"`
	Shapes      []map[string]any `json:"shapes"`
	Size        map[string]any   `json:"size,omitempty"`
}

// Render returns the wrapper script's Python source.
func (w Wrapper) Render() (string, error) {
	required := map[string]string{"harness dir": w.HarnessDir, "problem path": w.ProblemPath}
	if w.JobFile == "" {
		required["candidate path"] = w.CandidatePath
	}
	for name, v := range required {
		if v == "" {
			return "", fmt.Errorf("render ncu wrapper: %w: no %s", ErrConfig, name)
		}
		if !utf8.ValidString(v) {
			return "", fmt.Errorf("render ncu wrapper: %w: %s %q is not valid UTF-8", ErrConfig, name, v)
		}
	}
	req := loadRequest{ProblemPath: w.ProblemPath, DType: w.DType, Seeds: w.Seeds, TF32: w.TF32, Shapes: []map[string]any{}}
	if len(req.Seeds) == 0 {
		req.Seeds = []int64{1, 2, 3}
	}
	if req.TF32 == "" {
		req.TF32 = "forbid"
	}
	req.Size = w.ShapeOverride
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(req); err != nil {
		return "", fmt.Errorf("render ncu wrapper: load request: %w", err)
	}
	reqJSON := strings.TrimSpace(buf.String())
	device := w.Device
	if device == "" {
		device = "cuda"
	}
	idle := w.IdleSeconds
	if idle <= 0 {
		idle = defaultIdleSeconds
	}
	ctx := pongo2.Context{
		"range_name_raw": RangeName,
		"warmup":         strconv.Itoa(max(w.Warmup, 1)),
		"idle_seconds":   strconv.Itoa(idle),
		"job_file":       "None",
	}
	literals := map[string]string{
		"harness_dir": w.HarnessDir, "candidate_path": w.CandidatePath, "request_json": reqJSON,
		"entry": w.Entry, "device": device, "range_name": RangeName,
	}
	if w.JobFile != "" {
		literals["job_file"] = w.JobFile
	}
	for key, v := range literals {
		lit, err := pyString(v)
		if err != nil {
			return "", fmt.Errorf("render ncu wrapper: %s: %w", key, err)
		}
		ctx[key] = lit
	}
	out, err := wrapperTpl.Execute(ctx)
	if err != nil {
		return "", fmt.Errorf("render ncu wrapper: %w", err)
	}
	return out, nil
}

// pyString returns a Python string literal for s. Go's quoting uses only
// escapes Python shares (\n, \", \\, \xNN, \uNNNN, ...); strings that are
// not valid UTF-8 are refused because \xNN means a byte to Go but a code
// point to Python.
func pyString(s string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: %q is not valid UTF-8", ErrConfig, s)
	}
	return strconv.Quote(s), nil
}
