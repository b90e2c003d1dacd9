package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/prompts"
)

// artifacts writes a run's files under its run dir:
//
//	input/                      copies of problem.py, input.py, test.py, kagent.yaml
//	config.yaml                 the resolved configuration
//	round000/input/             the input kernel: kernel.py, verdict.json, timing.json, metrics.json
//	round000/baselines.json     PyTorch eager and torch.compile timings
//	roundNNN/diagnose-<parent>.{prompt,reply}.md, diagnosis-<parent>.json
//	roundNNN/candK/             optimize.{prompt,reply}.md, kernel.py, verdict.json,
//	                            timing.json, metrics.json, compare.json, reflect.{prompt,reply}.md
//	roundNNN/candK/refineJ/     refine.{prompt,reply}.md and the repaired kernel's files
//	best_kernel.py, report.md, report.json, plots, events.jsonl
//
// Paths are safe for concurrent use by different candidates.
type artifacts struct {
	dir string
}

func newArtifacts(dir string) (*artifacts, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("run dir %s: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create run dir: %w", err)
	}
	return &artifacts{dir: abs}, nil
}

// path is the absolute path of a file of the run dir.
func (a *artifacts) path(rel ...string) string {
	return filepath.Join(append([]string{a.dir}, rel...)...)
}

// write writes one file, creating its folder.
func (a *artifacts) write(rel string, data []byte) error {
	p := a.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// appendTo appends data (whole lines) to a file, creating it and its folder.
func (a *artifacts) appendTo(rel string, data []byte) error {
	p := a.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("append %s: %w", rel, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("append %s: %w", rel, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("append %s: %w", rel, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("append %s: %w", rel, err)
	}
	return nil
}

// writeAtomic writes a file whole or not at all (a temporary file renamed
// into place), for files a resumed run trusts.
func (a *artifacts) writeAtomic(rel string, data []byte) error {
	if err := atomicfile.Write(a.path(rel), data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}

// writeJSON writes v as indented JSON.
func (a *artifacts) writeJSON(rel string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return a.write(rel, append(b, '\n'))
}

// writePrompt writes a rendered prompt as markdown with its two messages.
func (a *artifacts) writePrompt(rel string, p prompts.Prompt) error {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- prompt %s -->\n\n## system\n\n%s\n\n## user\n\n%s\n", p.Name, strings.TrimRight(p.System, "\n"), strings.TrimRight(p.User, "\n"))
	return a.write(rel, []byte(b.String()))
}

// copyInputs writes the kernel dir's files into input/ as they were read
// when the dir was loaded (not read again); problem.py and test.py are
// read-only there, like the pinned copies the workers load.
func (a *artifacts) copyInputs(t *kerneldir.Task) error {
	for _, f := range []struct {
		path, src string
		perm      os.FileMode
	}{
		{t.ProblemPath, t.ProblemSource, 0o444}, {t.KernelPath, t.KernelSource, 0o644},
		{t.TestPath, t.TestSource, 0o444}, {t.OptionsPath, t.OptionsSource, 0o644},
	} {
		if f.path == "" {
			continue
		}
		rel := filepath.Join("input", filepath.Base(f.path))
		if err := atomicfile.Write(a.path(rel), []byte(f.src), f.perm); err != nil {
			return fmt.Errorf("copy input %s: %w", rel, err)
		}
	}
	return nil
}

// kernelPath is the file a candidate's source is written to (and verified
// from).
func (a *artifacts) kernelPath(id string) string {
	return a.path(candidateDir(id), "kernel.py")
}

// candidateFile is a file of a candidate's folder, relative to the run dir.
func candidateFile(id, name string) string { return filepath.Join(candidateDir(id), name) }
