// Package roofline holds the GPU specs database and places measured kernels on a
// roofline: speed-of-light percentages, a bottleneck class, the headroom left and
// the physical floor below which no correct kernel can run.
package roofline

// Specs are the facts of one GPU model. Peak rates are dense (non-sparse).
type Specs struct {
	Name        string   `yaml:"name" json:"name"`
	Vendor      string   `yaml:"vendor" json:"vendor"`
	Arch        string   `yaml:"arch" json:"arch"`
	Target      string   `yaml:"target" json:"target"` // compute capability or gfx target
	DeviceNames []string `yaml:"device_names" json:"device_names"`
	// Aliases are other names people use for the GPU (KernelAgent's keys,
	// short forms such as "H100 SXM"); Lookup accepts them too.
	Aliases  []string `yaml:"aliases,omitempty" json:"aliases,omitempty"`
	Units    int      `yaml:"units" json:"units"` // SMs, CUs or Xe-cores
	WarpSize int      `yaml:"warp_size" json:"warp_size"`

	FP32TFLOPS float64 `yaml:"fp32_tflops" json:"fp32_tflops"`
	TF32TFLOPS float64 `yaml:"tf32_tflops" json:"tf32_tflops"`
	FP16TFLOPS float64 `yaml:"fp16_tflops" json:"fp16_tflops"`
	BF16TFLOPS float64 `yaml:"bf16_tflops" json:"bf16_tflops"`
	FP8TFLOPS  float64 `yaml:"fp8_tflops" json:"fp8_tflops"`

	MemBWGBs  float64  `yaml:"mem_bw_gbs" json:"mem_bw_gbs"`
	MemGB     float64  `yaml:"mem_gb" json:"mem_gb"`
	L2MB      float64  `yaml:"l2_mb" json:"l2_mb"`
	SmemKB    float64  `yaml:"smem_kb" json:"smem_kb"`
	TDPWatts  float64  `yaml:"tdp_w" json:"tdp_w"`
	Unsourced []string `yaml:"unsourced,omitempty" json:"unsourced,omitempty"` // fields whose figures could not be sourced
	Notes     string   `yaml:"notes,omitempty" json:"notes,omitempty"`
	Source    string   `yaml:"source,omitempty" json:"source,omitempty"` // where the figures come from
}

// Metrics are what a profiler (or the synthetic model) measured for one kernel
// call. Percentages are 0–100. Zero means "not measured".
type Metrics struct {
	Source     string  `json:"source"` // "ncu", "rocprof", "synthetic"
	TimeMS     float64 `json:"time_ms"`
	BytesRead  float64 `json:"bytes_read"`
	BytesWrite float64 `json:"bytes_write"`
	FLOPs      float64 `json:"flops"`
	// ComputeSOL and MemorySOL are speed-of-light percentages from the profiler.
	ComputeSOL float64 `json:"compute_sol_pct"`
	MemorySOL  float64 `json:"memory_sol_pct"`
	// TensorPipePct is how busy the tensor (matrix) pipe was, 0–100, when the
	// profiler measures it.
	TensorPipePct float64 `json:"tensor_pipe_pct,omitempty"`
	// Kernels lists the kernel names the metrics were aggregated over.
	Kernels []string `json:"kernels,omitempty"`
	// Raw holds every metric by its profiler name, summed or averaged over Kernels.
	Raw map[string]float64 `json:"raw,omitempty"`
	// Fallback says why the synthetic model was used instead of the profiler.
	Fallback string `json:"fallback,omitempty"`
	// DType is the dominant data type of the work ("fp32", "bf16", ...); it
	// picks the peak FLOP rate of a synthetic roofline.
	DType string `json:"dtype,omitempty"`
	// Warnings are things a reader of the metrics should know (a launch cap
	// reached, a metric the profiler did not report).
	Warnings []string `json:"warnings,omitempty"`
}

// Class is the kind of limit a kernel is up against.
type Class string

// Roofline classes.
const (
	ClassMemory  Class = "memory"
	ClassCompute Class = "compute"
	ClassLatency Class = "latency" // under-utilised: neither memory nor compute is busy
	ClassUnknown Class = "unknown" // nothing measured to classify
)

// Why a kernel could not be placed on the roofline (Result.Unplaced).
const (
	UnplacedNothingMeasured = "nothing was measured to place on the roofline"
	UnplacedNoPeaks         = "the platform has no peak figures"
)

// Result places one kernel on the roofline.
type Result struct {
	ComputeSOL float64 `json:"compute_sol_pct"`
	MemorySOL  float64 `json:"memory_sol_pct"`
	// SOL is the larger of the two: how close the kernel is to its binding limit.
	SOL        float64  `json:"sol_pct"`
	Class      Class    `json:"class"`
	Headroom   float64  `json:"headroom_pct"`
	AtRoofline bool     `json:"at_roofline"`
	Source     string   `json:"source"`
	Warnings   []string `json:"warnings,omitempty"`
	// Unplaced says why the kernel could not be placed (UnplacedNoPeaks,
	// UnplacedNothingMeasured); Class is then unknown, and the SOLs,
	// Headroom and AtRoofline are zero and mean nothing (see Placed).
	Unplaced string `json:"unplaced,omitempty"`
	// AchievedGBs and AchievedTFLOPS are bytes and FLOPs over time, when both
	// were measured or counted.
	AchievedGBs    float64 `json:"achieved_gbs,omitempty"`
	AchievedTFLOPS float64 `json:"achieved_tflops,omitempty"`
	// FloorMS is the roofline floor of the work (see Floor); FloorFraction is
	// FloorMS over the measured time (1 = at the physical limit).
	FloorMS       float64 `json:"floor_ms,omitempty"`
	FloorFraction float64 `json:"floor_fraction,omitempty"`
	// TensorCores is set when the profiler saw the tensor pipe in use.
	TensorCores bool `json:"tensor_cores,omitempty"`
}

// Placed reports whether r placed the kernel on the roofline: whether its
// SOLs, headroom and class say anything. Reports show "n/a" for them
// otherwise.
func (r Result) Placed() bool { return r.Class != "" && r.Class != ClassUnknown }
