package kerneldir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/harness"
	"github.com/kagent-kernels/kagent/internal/safefile"
	"github.com/kagent-kernels/kagent/internal/suggest"
)

// File names of a kernel dir.
const (
	ProblemFile = "problem.py"
	InputFile   = "input.py"  // KernelAgent's name for the starting kernel
	KernelFile  = "kernel.py" // the same, by another name
	TestFile    = "test.py"
	OptionsFile = "kagent.yaml"
)

// LoadOptions tunes Load.
type LoadOptions struct {
	// Python runs the static check (only the standard library is needed).
	Python string
	// CacheDir receives the harness ("" = harness.CacheDir()).
	CacheDir string
	// RequireKernel: the dir must hold input.py or kernel.py (false for
	// `kagent generate`, which writes one).
	RequireKernel bool
}

// Load reads and statically checks the kernel dir at dir. Every error names the
// file at fault and what to change.
func Load(ctx context.Context, dir string, o LoadOptions) (*Task, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("kernel dir %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s does not exist", ErrInvalid, dir)
		}
		return nil, fmt.Errorf("kernel dir %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%w: %s is a file; --kernel-dir takes the folder holding problem.py", ErrInvalid, dir)
	}
	t := &Task{Dir: abs, Name: filepath.Base(abs)}
	rel := func(name string) string { return filepath.Join(dir, name) }
	read := func(name string, limit int64) ([]byte, error) {
		b, err := safefile.Read(dir, name, limit)
		if errors.Is(err, safefile.ErrUnsafe) {
			return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
		}
		return b, err
	}

	src, err := read(ProblemFile, safefile.MaxPython)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s not found (the PyTorch reference: class Model, get_inputs(), get_init_inputs())", ErrInvalid, rel(ProblemFile))
		}
		return nil, err
	}
	t.ProblemSource, t.ProblemSHA256 = string(src), Sum(src)

	var kernels []string
	for _, name := range []string{InputFile, KernelFile} {
		if safefile.Exists(abs, name) {
			kernels = append(kernels, name)
		}
	}
	switch {
	case len(kernels) > 1:
		return nil, fmt.Errorf("%w: %s holds both input.py and kernel.py; keep the starting kernel in one of them", ErrInvalid, dir)
	case len(kernels) == 1:
		t.KernelPath = filepath.Join(abs, kernels[0])
		b, err := read(kernels[0], safefile.MaxPython)
		if err != nil {
			return nil, err
		}
		t.KernelSource = string(b)
	case o.RequireKernel:
		return nil, fmt.Errorf("%w: %s has no input.py (or kernel.py) holding the Triton kernel to optimize; `kagent generate` can write a first one", ErrInvalid, dir)
	}
	if safefile.Exists(abs, TestFile) {
		b, err := read(TestFile, safefile.MaxPython)
		if err != nil {
			return nil, err
		}
		t.TestPath, t.TestSource, t.TestSHA256 = filepath.Join(abs, TestFile), string(b), Sum(b)
	}
	if err := loadOptions(t, dir); err != nil {
		return nil, err
	}
	if t.Options.Name != "" {
		t.Name = t.Options.Name
	}
	cache := o.CacheDir
	if cache == "" {
		cache = harness.CacheDir()
	}
	if err := t.pinFiles(cache); err != nil {
		return nil, err
	}
	if err := staticCheck(ctx, t, dir, cache, o); err != nil {
		return nil, err
	}
	return t, nil
}

// ReadOptions reads and checks the kagent.yaml of the kernel dir at dir:
// zero Options when there is none.
func ReadOptions(dir string) (Options, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Options{}, fmt.Errorf("kernel dir %s: %w", dir, err)
	}
	t := &Task{Dir: abs}
	if err := loadOptions(t, dir); err != nil {
		return Options{}, err
	}
	return t.Options, nil
}

func loadOptions(t *Task, dir string) error {
	shown := filepath.Join(dir, OptionsFile)
	if !safefile.Exists(t.Dir, OptionsFile) {
		return nil
	}
	data, err := safefile.Read(dir, OptionsFile, safefile.MaxYAML)
	if errors.Is(err, safefile.ErrUnsafe) {
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if err != nil {
		return err
	}
	t.OptionsPath, t.OptionsSource = filepath.Join(t.Dir, OptionsFile), string(data)
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&t.Options); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: %s", ErrInvalid, yamlMessage(shown, err))
	}
	return validateOptions(t.Options, shown)
}

func validateOptions(o Options, shown string) error {
	var errs []string
	switch o.DType {
	case "", "fp32", "fp16", "bf16":
	default:
		errs = append(errs, fmt.Sprintf("dtype %q is not one of fp32, fp16, bf16", o.DType))
	}
	switch o.TF32 {
	case "", "allow", "forbid":
	default:
		errs = append(errs, fmt.Sprintf("tf32 %q is not allow or forbid", o.TF32))
	}
	if o.ATol != nil && *o.ATol < 0 || o.RTol != nil && *o.RTol < 0 {
		errs = append(errs, "atol and rtol must not be negative")
	}
	for i, s := range o.Shapes {
		if len(s) == 0 {
			errs = append(errs, fmt.Sprintf("shapes[%d] is empty: give module-level constants to override, e.g. {batch_size: 4}", i))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(o.Sizes)) {
		if !sizeName.MatchString(name) {
			errs = append(errs, fmt.Sprintf("sizes: name %q must be letters, digits, '_' or '-' and not contain '='", name))
		}
		if len(o.Sizes[name]) == 0 {
			errs = append(errs, fmt.Sprintf("sizes.%s is empty: give module-level constants to override, e.g. {batch_size: 4}", name))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, shown, strings.Join(errs, "; "))
	}
	return nil
}

// yamlMessage formats a yaml.v3 error as "FILE:LINE: message".
func yamlMessage(file string, err error) string {
	var te *yaml.TypeError
	msgs := []string{err.Error()}
	if errors.As(err, &te) {
		msgs = te.Errors
	}
	var out []string
	for _, m := range msgs {
		m = strings.TrimPrefix(m, "yaml: ")
		var line int
		var rest string
		if n, _ := fmt.Sscanf(m, "line %d:", &line); n == 1 {
			rest = strings.TrimSpace(m[strings.Index(m, ":")+1:])
			if f, ok := strings.CutPrefix(rest, "field "); ok {
				if name, _, ok := strings.Cut(f, " not found"); ok {
					rest = unknownOption(name)
				}
			}
			out = append(out, fmt.Sprintf("%s:%d: %s", file, line, rest))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %s", file, m))
	}
	return strings.Join(out, "; ")
}

// unknownOption says a kagent.yaml key is unknown and names the closest
// known key when one is close, else every known key.
func unknownOption(name string) string {
	var keys []string
	t := reflect.TypeOf(Options{})
	for i := range t.NumField() {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	if s := suggest.Closest(name, keys); s != "" {
		return fmt.Sprintf("unknown key %q; did you mean %q?", name, s)
	}
	return fmt.Sprintf("unknown key %q (known: %s)", name, strings.Join(keys, ", "))
}

// checkReport is kdir_check.py's output.
type checkReport struct {
	Files map[string]struct {
		Error     *string  `json:"error"`
		Line      *int     `json:"line"`
		Classes   []string `json:"classes"`
		Functions []string `json:"functions"`
		TritonJIT []string `json:"triton_jit"`
	} `json:"files"`
}

// staticCheck parses the Python files (without importing them) and checks that
// they define what kagent calls.
func staticCheck(ctx context.Context, t *Task, shownDir, cache string, o LoadOptions) error {
	files := []string{t.ProblemPath}
	if t.KernelPath != "" {
		files = append(files, t.KernelPath)
	}
	var rep checkReport
	sc := harness.Script{Name: "kdir_check.py", Python: o.Python, Args: files, Dir: t.Dir, CacheDir: cache}
	if err := sc.JSON(ctx, &rep); err != nil {
		if errors.Is(err, harness.ErrNoPython) {
			return err
		}
		return fmt.Errorf("check kernel dir: %w", err)
	}
	shown := func(p string) string { return filepath.Join(shownDir, filepath.Base(p)) }
	for _, p := range files {
		f := rep.Files[p]
		if f.Error != nil {
			if f.Line != nil {
				return fmt.Errorf("%w: %s:%d: %s", ErrInvalid, shown(p), *f.Line, *f.Error)
			}
			return fmt.Errorf("%w: %s: %s", ErrInvalid, shown(p), *f.Error)
		}
	}
	prob := rep.Files[t.ProblemPath]
	var missing []string
	if !containsStr(prob.Classes, "Model") {
		missing = append(missing, "class Model")
	}
	for _, fn := range []string{"get_inputs", "get_init_inputs"} {
		if !containsStr(prob.Functions, fn) {
			missing = append(missing, fn+"()")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s: missing %s (KernelBench form: class Model(nn.Module), get_inputs(), get_init_inputs())", ErrInvalid, shown(t.ProblemPath), strings.Join(missing, ", "))
	}
	if t.KernelPath == "" {
		return nil
	}
	k := rep.Files[t.KernelPath]
	switch {
	case containsStr(k.Classes, "ModelNew"):
		t.Entry = EntryModelNew
	case containsStr(k.Functions, "kernel_function"):
		t.Entry = EntryKernelFunction
	default:
		return fmt.Errorf("%w: %s: defines neither kernel_function nor class ModelNew; kagent calls kernel_function(*inputs, *init_inputs) or ModelNew(*init_inputs)(*inputs)", ErrInvalid, shown(t.KernelPath))
	}
	return nil
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
