// Package export ships a kernel kagent verified: it writes a Hugging Face
// kernel-builder project (a Triton "noarch" kernel with a torch op, a README
// with the run's measurements and a test against the PyTorch reference), a
// module that patches a PyTorch model's matching submodules with the kernel,
// and a KernelBench ModelNew file, plus a manifest (export.json).
//
// The generated Python comes from embedded text/template files; kernel and
// problem sources are written verbatim into their own files (or joined as
// values, never parsed as template text), so any text they hold survives.
package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// ErrInvalid marks input to fix: no promoted best, no entry point, a file
// that cannot be read. Commands report it as a usage error.
var ErrInvalid = errors.New("cannot export")

// Kernel is what an export ships.
type Kernel struct {
	// Name is the kernel's name (kagent.yaml's name, else the kernel dir's).
	Name          string
	Source        string // the kernel file, verbatim
	Entry         kerneldir.Entry
	ProblemSource string // problem.py, verbatim
	Options       kerneldir.Options
	// Origin says where Source came from (a run's candidate or a file).
	Origin string
	// Run is the run that measured the kernel (nil: exported from a file).
	Run *RunInfo
}

// RunInfo is what a run measured of the exported kernel.
type RunInfo struct {
	ID          string           `json:"id"`
	CandidateID string           `json:"candidate"`
	Strategy    string           `json:"strategy"`
	Platform    string           `json:"platform"`
	Device      string           `json:"device"`
	Size        string           `json:"size,omitempty"` // the timed size, from report.json
	FinishedAt  time.Time        `json:"finished_at"`
	Best        *platform.Timing `json:"best"`
	Input       *platform.Timing `json:"input,omitempty"`
	Eager       *platform.Timing `json:"eager,omitempty"`
	Compile     *platform.Timing `json:"compile,omitempty"`
}

// entryDef finds the top-level definitions kagent calls (kerneldir.Entry).
var entryDef = regexp.MustCompile(`(?m)^(class\s+ModelNew\b|def\s+kernel_function\b)`)

// FindEntry says how the kernel source is called: ModelNew wins over
// kernel_function, as when kagent loads a kernel dir. Only top-level
// definitions count.
func FindEntry(src string) (kerneldir.Entry, error) {
	found := entryDef.FindAllString(src, -1)
	for _, m := range found {
		if strings.HasPrefix(m, "class") {
			return kerneldir.EntryModelNew, nil
		}
	}
	if len(found) > 0 {
		return kerneldir.EntryKernelFunction, nil
	}
	return "", fmt.Errorf("%w: defines neither a top-level kernel_function nor class ModelNew (kagent calls kernel_function(*inputs, *init_inputs) or ModelNew(*init_inputs)(*inputs))", ErrInvalid)
}

// FromFiles is the kernel in kernelPath for the problem in problemPath, with
// the settings of the kagent.yaml beside the problem (if any).
func FromFiles(kernelPath, problemPath string) (*Kernel, error) {
	src, err := readFile(kernelPath)
	if err != nil {
		return nil, err
	}
	prob, err := readFile(problemPath)
	if err != nil {
		return nil, err
	}
	entry, err := FindEntry(src)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", kernelPath, err)
	}
	dir := filepath.Dir(problemPath)
	opts, err := kerneldir.ReadOptions(dir)
	if err != nil {
		return nil, err
	}
	return &Kernel{Name: kernelName(opts, dir), Source: src, Entry: entry, ProblemSource: prob, Options: opts, Origin: absPath(kernelPath)}, nil
}

// FromRun is the promoted best of a run of the kernel dir: runID, or the
// latest finished run with a promoted best when runID is "". dbPath ""
// means the kernel dir's history.
func FromRun(ctx context.Context, kernelDir, dbPath, runID string) (*Kernel, error) {
	if dbPath == "" {
		dbPath = filepath.Join(kernelDir, ".kagent", "history.db")
	}
	if _, err := os.Stat(dbPath); err != nil {
		return nil, fmt.Errorf("%w: no run history at %s (run kagent optimize first, or give --kernel FILE --problem FILE)", ErrInvalid, dbPath)
	}
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		return nil, fmt.Errorf("open run history: %w", err)
	}
	defer st.Close()
	if runID == "" {
		runs, err := st.ListRuns(ctx, store.RunFilter{Status: store.RunFinished})
		if err != nil {
			return nil, fmt.Errorf("list runs: %w", err)
		}
		for _, r := range runs { // newest first
			if promoted(r) {
				runID = r.ID
				break
			}
		}
		if runID == "" {
			return nil, fmt.Errorf("%w: no finished run of %s has a promoted best kernel (see kagent runs list)", ErrInvalid, kernelDir)
		}
	}
	d, err := st.GetRun(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: no run %s (see kagent runs list)", ErrInvalid, runID)
	}
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", runID, err)
	}
	if !promoted(d.Run) {
		return nil, fmt.Errorf("%w: run %s has no promoted best kernel (its best is the input kernel); export another run (see kagent runs list) or a kernel file with --kernel FILE --problem FILE", ErrInvalid, runID)
	}
	best, err := st.Candidate(ctx, d.ID, d.BestID)
	if err != nil {
		return nil, fmt.Errorf("read the best kernel of run %s: %w", runID, err)
	}
	entry, err := FindEntry(best.Source)
	if err != nil {
		return nil, fmt.Errorf("run %s, candidate %s: %w", d.ID, best.ID, err)
	}
	prob, err := readFile(filepath.Join(kernelDir, kerneldir.ProblemFile))
	if err != nil {
		return nil, err
	}
	if err := sameProblem(ctx, st, d.ID, prob); err != nil {
		return nil, err
	}
	opts, err := kerneldir.ReadOptions(kernelDir)
	if err != nil {
		return nil, err
	}
	info := &RunInfo{ID: d.ID, CandidateID: best.ID, Strategy: d.Strategy, Platform: d.Platform, Device: d.Device,
		FinishedAt: d.FinishedAt, Best: best.Timing, Input: d.Baselines.Input, Eager: d.Baselines.Eager, Compile: d.Baselines.Compile,
		Size: reportSize(filepath.Join(kernelDir, ".kagent", "runs", d.ID, "report.json"))}
	return &Kernel{Name: kernelName(opts, kernelDir), Source: best.Source, Entry: entry, ProblemSource: prob, Options: opts,
		Origin: fmt.Sprintf("run %s, candidate %s", d.ID, best.ID), Run: info}, nil
}

// sameProblem refuses a problem.py that is not the one the run judged
// against (runs recorded before the hash was kept pass).
func sameProblem(ctx context.Context, st *store.Store, runID, problem string) error {
	evs, err := st.Events(ctx, runID, 0, 0)
	if err != nil {
		return fmt.Errorf("read run %s: %w", runID, err)
	}
	now := kerneldir.Sum([]byte(problem))
	for _, e := range evs {
		var pin store.ProblemPin
		if e.Kind != store.EventProblem || json.Unmarshal(e.Data, &pin) != nil || pin.Problem == "" {
			continue
		}
		if pin.Problem != now {
			return fmt.Errorf("%w: problem.py changed since run %s (sha256 %.12s, now %.12s): its kernel was verified against the old one; run kagent optimize again, or export the kernel file with --kernel FILE --problem FILE", ErrInvalid, runID, pin.Problem, now)
		}
	}
	return nil
}

// promoted reports whether a run's best is a kernel the loop promoted (not
// the input kernel, not none).
func promoted(r store.Run) bool {
	input := r.InputID
	if input == "" {
		input = store.InputID
	}
	return r.BestID != "" && r.BestID != input
}

func readFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s does not exist", ErrInvalid, path)
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return string(b), nil
}

func kernelName(o kerneldir.Options, dir string) string {
	if o.Name != "" {
		return o.Name
	}
	return filepath.Base(absPath(dir))
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
