// Package kerneldir loads and checks a kernel dir: the PyTorch problem, the
// Triton kernel that replaces it, an optional user test and optional settings.
package kerneldir

// Entry is how a kernel file is called.
type Entry string

// Entry points a kernel file may define.
const (
	EntryModelNew       Entry = "ModelNew"        // class ModelNew, built like Model, weights from Model's state_dict
	EntryKernelFunction Entry = "kernel_function" // kernel_function(*inputs, *init_inputs)
)

// Options are the settings of kagent.yaml.
type Options struct {
	Name         string           `yaml:"name" json:"name,omitempty"`
	DType        string           `yaml:"dtype" json:"dtype,omitempty"` // fp32 | fp16 | bf16; "" keeps the problem's dtypes
	ATol         *float64         `yaml:"atol" json:"atol,omitempty"`
	RTol         *float64         `yaml:"rtol" json:"rtol,omitempty"`
	TF32         string           `yaml:"tf32" json:"tf32,omitempty"` // allow | forbid
	AllowInplace bool             `yaml:"allow_inplace" json:"allow_inplace,omitempty"`
	Shapes       []map[string]any `yaml:"shapes" json:"shapes,omitempty"`
	// Sizes are named overrides of the problem's size constants for the
	// timed shape (the shape every draw, timing and profile uses), chosen
	// with --size NAME; "cpu" is the cpu platform's default when present.
	Sizes map[string]map[string]any `yaml:"sizes" json:"sizes,omitempty"`
	// Size is the override in force for this run (from Sizes or --size
	// key=value pairs); empty means the problem's own sizes. Not a
	// kagent.yaml key: SelectSize sets it.
	Size map[string]any `yaml:"-" json:"size,omitempty"`
	// SizeName is the name Size came from ("" for explicit pairs or none).
	SizeName string `yaml:"-" json:"size_name,omitempty"`
	// Atomics declares that the kernel uses atomics, so two runs may differ
	// within tolerance instead of bit for bit.
	Atomics bool `yaml:"atomics" json:"atomics,omitempty"`
}

// Task is a loaded and checked kernel dir. Paths are absolute.
type Task struct {
	Dir  string
	Name string
	// ProblemPath is the pinned copy of the kernel dir's problem.py (see
	// pin.go): what workers load. TestPath likewise for test.py.
	ProblemPath string
	KernelPath  string // input.py or kernel.py, in the kernel dir
	TestPath    string // "" when there is no test.py
	OptionsPath string // "" when there is no kagent.yaml
	Entry       Entry
	Options     Options
	// The files' contents, read once at load time.
	ProblemSource string
	KernelSource  string
	TestSource    string
	OptionsSource string
	// ProblemSHA256 and TestSHA256 identify the problem a run judges
	// against; a resumed run must find the same.
	ProblemSHA256 string
	TestSHA256    string

	pinCache string // where ProblemPath and TestPath were pinned
}
