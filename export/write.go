package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/kerneldir"
)

// Format is one form of an export.
type Format string

// The forms an export can write, each in its own folder of the output.
const (
	FormatHF          Format = "hf"          // a Hugging Face kernel-builder project
	FormatPatch       Format = "patch"       // a module that patches a PyTorch model
	FormatKernelBench Format = "kernelbench" // a KernelBench ModelNew file
)

// Formats lists every format, in the order they are written.
var Formats = []Format{FormatHF, FormatPatch, FormatKernelBench}

// ParseFormat reads a --format value: one format or "all".
func ParseFormat(s string) ([]Format, error) {
	if s == "all" || s == "" {
		return slices.Clone(Formats), nil
	}
	if slices.Contains(Formats, Format(s)) {
		return []Format{Format(s)}, nil
	}
	return nil, fmt.Errorf("%w: format %q is not one of hf, patch, kernelbench, all", ErrInvalid, s)
}

// Options say where and what to write.
type Options struct {
	Out     string   // the folder to write; it must not exist or be empty (unless Force)
	Formats []Format // none: all
	Force   bool     // replace a non-empty Out
	Version string   // kagent's version, written into the README and the manifest
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// ManifestFile is the manifest's name at the top of the output.
const ManifestFile = "export.json"

// Manifest is export.json: what was written, from what.
type Manifest struct {
	Schema        int        `json:"schema"`
	Name          string     `json:"name"`
	Package       string     `json:"package"` // the Python name of the kernel
	Entry         string     `json:"entry"`
	Origin        string     `json:"origin"`
	KernelSHA256  string     `json:"kernel_sha256"`        // of the kernel source's bytes
	SourceHash    string     `json:"source_hash"`          // kagent's candidate hash (agent/store.SourceHash)
	ProblemSHA256 string     `json:"problem_sha256"`       // of problem.py's bytes
	Run           *RunInfo   `json:"run"`                  // null: exported from a file, not measured
	Speedup       *Speedups  `json:"speedup,omitempty"`    // from the run's timings
	Tolerance     *Tolerance `json:"tolerance"`            // what the generated checks use (null fields: kagent's per-dtype defaults)
	Formats       []Format   `json:"formats"`              // what was written
	Files         []string   `json:"files"`                // every file written, relative to the output, sorted
	KagentVersion string     `json:"kagent_version"`       //
	CreatedAt     time.Time  `json:"created_at"`           //
	Notes         []string   `json:"notes,omitempty"`      //
	Out           string     `json:"out,omitempty"`        // the output folder (absolute)
	Size          string     `json:"timed_size,omitempty"` // the size the run timed
}

// Speedups are the best kernel's speedups over the run's baselines (0: not timed).
type Speedups struct {
	VsInput   float64 `json:"vs_input,omitempty"`
	VsEager   float64 `json:"vs_eager,omitempty"`
	VsCompile float64 `json:"vs_compile,omitempty"`
}

// Tolerance is kagent.yaml's atol and rtol (nil: the per-dtype default).
type Tolerance struct {
	ATol *float64 `json:"atol"`
	RTol *float64 `json:"rtol"`
}

// Write exports k to o.Out. Everything is written to a temporary folder
// beside Out and renamed into place at the end, so a failure leaves Out as
// it was.
func Write(ctx context.Context, k *Kernel, o Options) (*Manifest, error) {
	if o.Out == "" {
		return nil, fmt.Errorf("%w: no output folder", ErrInvalid)
	}
	formats := o.Formats
	if len(formats) == 0 {
		formats = slices.Clone(Formats)
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, fmt.Errorf("export to %s: %w", o.Out, err)
	}
	if err := checkOut(out, o.Force); err != nil {
		return nil, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	d := newData(k, o.Version, now().UTC())
	files := map[string]string{}
	for _, f := range formats {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var err error
		switch f {
		case FormatHF:
			err = hfFiles(d, files)
		case FormatPatch:
			err = patchFiles(d, files)
		case FormatKernelBench:
			err = kernelBenchFiles(d, files)
		default:
			err = fmt.Errorf("%w: unknown format %q", ErrInvalid, f)
		}
		if err != nil {
			return nil, err
		}
	}
	m := d.manifest(formats, out)
	for name := range files {
		m.Files = append(m.Files, name)
	}
	m.Files = append(m.Files, ManifestFile)
	sort.Strings(m.Files)
	mj, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("export manifest: %w", err)
	}
	files[ManifestFile] = string(mj) + "\n"
	if err := writeTree(out, files, o.Force); err != nil {
		return nil, err
	}
	return m, nil
}

// checkOut refuses an output that is a file, or a non-empty folder without force.
func checkOut(out string, force bool) error {
	st, err := os.Stat(out)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("export to %s: %w", out, err)
	case !st.IsDir():
		return fmt.Errorf("%w: %s is a file; give a folder to --out", ErrInvalid, out)
	}
	ents, err := os.ReadDir(out)
	if err != nil {
		return fmt.Errorf("export to %s: %w", out, err)
	}
	if len(ents) > 0 && !force {
		return fmt.Errorf("%w: %s is not empty (give --force to replace it, or another --out)", ErrInvalid, out)
	}
	return nil
}

// writeTree writes files into a temporary folder beside out, then puts it
// in out's place.
func writeTree(out string, files map[string]string, force bool) (err error) {
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("export to %s: %w", out, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".tmp-")
	if err != nil {
		return fmt.Errorf("export to %s: %w", out, err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("export to %s: %w", out, err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := filepath.Join(tmp, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("export %s: %w", n, err)
		}
		if err := os.WriteFile(p, []byte(files[n]), 0o644); err != nil {
			return fmt.Errorf("export %s: %w", n, err)
		}
	}
	// Out is absent or empty, or force: move it aside, then rename.
	old := ""
	if _, err := os.Stat(out); err == nil {
		if err := checkOut(out, force); err != nil { // changed meanwhile
			return err
		}
		old = tmp + ".old"
		if err := os.Rename(out, old); err != nil {
			return fmt.Errorf("export to %s: %w", out, err)
		}
	}
	if err := rename(tmp, out); err != nil {
		if old != "" {
			_ = os.Rename(old, out)
		}
		return fmt.Errorf("export to %s: %w", out, err)
	}
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return nil
}

// rename puts the written folder in place (a variable for the tests).
var rename = os.Rename

// reportSize is the timed size a run's report.json states ("" if unknown).
func reportSize(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var r struct {
		Size string `json:"size"`
	}
	if json.Unmarshal(b, &r) != nil {
		return ""
	}
	return r.Size
}

func (d *data) manifest(formats []Format, out string) *Manifest {
	k := d.K
	m := &Manifest{Schema: 1, Name: k.Name, Package: d.Pkg, Entry: string(k.Entry), Origin: k.Origin,
		KernelSHA256: kerneldir.Sum([]byte(k.Source)), SourceHash: store.SourceHash(k.Source),
		ProblemSHA256: kerneldir.Sum([]byte(k.ProblemSource)), Run: k.Run,
		Tolerance: &Tolerance{ATol: k.Options.ATol, RTol: k.Options.RTol},
		Formats:   formats, KagentVersion: d.Version, CreatedAt: d.Now, Out: out}
	if k.Run != nil {
		m.Speedup = &d.Speedup
		m.Size = k.Run.Size
		if !d.Representative {
			m.Notes = append(m.Notes, fmt.Sprintf("timed on the %s platform: not representative of GPU performance", k.Run.Platform))
		}
	} else {
		m.Notes = append(m.Notes, "exported from a file: no run measured this kernel")
	}
	return m
}

// pyIdent makes a Python identifier of a name: lower case, one '_' for
// each run of anything else, a letter first.
func pyIdent(name string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(name) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case !strings.HasSuffix(b.String(), "_"):
			b.WriteByte('_')
		}
	}
	s := strings.Trim(b.String(), "_")
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "k_" + s
	}
	return s
}
