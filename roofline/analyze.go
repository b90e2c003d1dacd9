package roofline

import (
	"fmt"
	"strings"
)

// Config tunes the analysis. Zero fields take the defaults of the metrics'
// source (see DefaultConfig).
type Config struct {
	// AtRooflinePct: a kernel whose SOL reaches this is at the roofline.
	AtRooflinePct float64 `yaml:"at_roofline_pct" json:"at_roofline_pct"`
	// UnderutilizedPct: when both SOLs are below this the kernel is
	// latency-bound (under-utilised).
	UnderutilizedPct float64 `yaml:"underutilized_pct" json:"underutilized_pct"`
	// TensorCorePct: the tensor pipe counts as used above this.
	TensorCorePct float64 `yaml:"tensor_core_pct" json:"tensor_core_pct"`
	// DType picks the peak FLOP rate of a synthetic roofline; it overrides
	// Metrics.DType ("" = use the metrics', then fp32).
	DType string `yaml:"dtype" json:"dtype"`
}

// Profiler-specific defaults. Nsight Compute's SOL percentages are against
// sustainable peaks, so 95% is reachable; rocprof counters and the synthetic
// model compare with datasheet peaks that real kernels rarely pass 90% of
// (an H200 copies at 88% of its 4800 GB/s), hence the lower thresholds.
const (
	NCUAtRooflinePct        = 95
	NCUUnderutilizedPct     = 60
	CounterAtRooflinePct    = 85
	CounterUnderutilizedPct = 40
	DefaultTensorCorePct    = 5
)

// DefaultConfig returns the thresholds for metrics from source ("ncu",
// "rocprof", "synthetic").
func DefaultConfig(source string) Config {
	c := Config{TensorCorePct: DefaultTensorCorePct}
	if source == "ncu" {
		c.AtRooflinePct, c.UnderutilizedPct = NCUAtRooflinePct, NCUUnderutilizedPct
	} else {
		c.AtRooflinePct, c.UnderutilizedPct = CounterAtRooflinePct, CounterUnderutilizedPct
	}
	return c
}

func (c Config) withDefaults(source string) Config {
	d := DefaultConfig(source)
	if c.AtRooflinePct <= 0 {
		c.AtRooflinePct = d.AtRooflinePct
	}
	if c.UnderutilizedPct <= 0 {
		c.UnderutilizedPct = d.UnderutilizedPct
	}
	if c.TensorCorePct <= 0 {
		c.TensorCorePct = d.TensorCorePct
	}
	return c
}

// Analyzer is Analyze with a fixed Config; it satisfies
// platform.RooflineAnalyzer.
type Analyzer struct {
	Config Config
}

// Analyze places m on the roofline of s (see the package function).
func (a Analyzer) Analyze(m Metrics, s Specs) Result { return Analyze(m, s, a.Config) }

// Analyze places one kernel call on the roofline of a GPU.
//
// SOL percentages come from the profiler when it measured them
// (Metrics.ComputeSOL/MemorySOL, e.g. ncu's sm__throughput and
// gpu__compute_memory_throughput). Otherwise they are synthetic: achieved
// bandwidth (bytes read + written over time) against the peak bandwidth, and
// achieved FLOP/s against the peak for the data type. The class is latency
// when both SOLs are under the under-utilisation threshold, else memory or
// compute, whichever is higher. Headroom is 100 - SOL (not below 0).
//
// A kernel that cannot be placed (nothing measured, or no peak bandwidth
// and no peak rate for what was measured, as on the cpu platform) gets
// class unknown with Unplaced saying why, and no SOL or headroom: zero
// percent of an unknown peak would read as "far from the roofline".
func Analyze(m Metrics, s Specs, cfg Config) Result {
	cfg = cfg.withDefaults(m.Source)
	r := Result{Source: m.Source}
	dtype := cfg.DType
	if dtype == "" {
		dtype = m.DType
	}
	if dtype == "" {
		dtype = "fp32"
	}
	bytes := m.BytesRead + m.BytesWrite
	secs := m.TimeMS / 1e3
	if secs > 0 && bytes > 0 {
		r.AchievedGBs = bytes / secs / 1e9
	}
	if secs > 0 && m.FLOPs > 0 {
		r.AchievedTFLOPS = m.FLOPs / secs / 1e12
	}
	if bytes > 0 || m.FLOPs > 0 {
		r.FloorMS = Floor(bytes, m.FLOPs, dtype, s)
		if m.TimeMS > 0 {
			r.FloorFraction = r.FloorMS / m.TimeMS
		}
	}
	r.TensorCores = m.TensorPipePct > cfg.TensorCorePct

	placed := true // some SOL was computed against a known peak
	switch {
	case m.ComputeSOL > 0 || m.MemorySOL > 0:
		r.ComputeSOL, r.MemorySOL = m.ComputeSOL, m.MemorySOL
	case secs > 0 && (bytes > 0 || m.FLOPs > 0):
		placed = false
		if s.MemBWGBs > 0 && bytes > 0 {
			r.MemorySOL = 100 * r.AchievedGBs / s.MemBWGBs
			placed = true
		} else if bytes > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("no peak bandwidth for %s: memory SOL not computed", s.Name))
		}
		if m.FLOPs > 0 {
			peak, used, err := s.PeakTFLOPS(dtype)
			switch {
			case err != nil:
				r.Warnings = append(r.Warnings, err.Error()+": compute SOL not computed")
			case peak <= 0:
				r.Warnings = append(r.Warnings, fmt.Sprintf("no %s peak for %s: compute SOL not computed", dtype, s.Name))
			default:
				if used != canonicalDType(dtype) {
					r.Warnings = append(r.Warnings, fmt.Sprintf("%s has no %s rate: compute SOL against its %s peak", s.Name, dtype, used))
				}
				r.ComputeSOL = 100 * r.AchievedTFLOPS / peak
				placed = true
			}
		}
		if r.MemorySOL > 100 {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"achieved %.0f GB/s exceeds the %.0f GB/s peak: data was served from cache or the byte count overstates traffic",
				r.AchievedGBs, s.MemBWGBs))
		}
		if r.ComputeSOL > 100 {
			r.Warnings = append(r.Warnings, fmt.Sprintf(
				"achieved %.1f TFLOP/s exceeds the %s peak: the FLOP count or the dtype is wrong", r.AchievedTFLOPS, dtype))
		}
	default:
		r.Class, r.Unplaced = ClassUnknown, UnplacedNothingMeasured
		r.Warnings = append(r.Warnings, "no SOL metrics and no time with bytes or FLOPs: nothing to place on the roofline")
		return r
	}
	if !placed {
		r.Class, r.Unplaced = ClassUnknown, UnplacedNoPeaks
		return r
	}

	r.SOL = max(r.ComputeSOL, r.MemorySOL)
	r.Headroom = max(0, 100-r.SOL)
	r.AtRoofline = r.SOL >= cfg.AtRooflinePct
	switch {
	case r.ComputeSOL < cfg.UnderutilizedPct && r.MemorySOL < cfg.UnderutilizedPct:
		r.Class = ClassLatency
	case r.MemorySOL >= r.ComputeSOL:
		r.Class = ClassMemory
	default:
		r.Class = ClassCompute
	}
	return r
}

// Floor is the shortest time, in milliseconds, in which s can move
// bytesMoved bytes to or from memory and execute flops FLOPs of dtype:
// max(bytes / peak bandwidth, flops / peak rate). No correct kernel runs
// faster (up to cache effects, see CheckPhysical).
//
// The rate is the dtype's dense tensor peak (the highest the hardware has,
// so the floor stays a lower bound for non-matrix work too). Use "tf32" for
// fp32 work when TF32 is allowed (Triton's tl.dot uses it by default). A
// dtype the GPU has no unit for falls back to the next wider one; an unknown
// dtype uses the highest peak of the GPU.
func Floor(bytesMoved, flops float64, dtype string, s Specs) (ms float64) {
	var t float64
	if bytesMoved > 0 && s.MemBWGBs > 0 {
		t = bytesMoved / (s.MemBWGBs * 1e9)
	}
	if flops > 0 {
		peak, _, err := s.PeakTFLOPS(dtype)
		if err != nil || peak <= 0 {
			peak = s.maxPeak()
		}
		if peak > 0 {
			t = max(t, flops/(peak*1e12))
		}
	}
	return t * 1e3
}

// CheckPhysical rejects a measured time that beats the roofline floor by
// more than measurement and cache effects allow. The floor is scaled by a
// safety factor: 0.9 when the data is much larger than L2, 0.5 when it
// fits in a few L2s (writes still in L2 when the kernel ends are not paid
// for within the measured time).
func CheckPhysical(timeMS, bytesMoved, flops float64, dtype string, s Specs) error {
	floor := Floor(bytesMoved, flops, dtype, s)
	if floor <= 0 || timeMS <= 0 {
		return nil
	}
	safety := 0.9
	if s.L2MB <= 0 || bytesMoved < 4*s.L2MB*1e6 {
		safety = 0.5
	}
	if timeMS < floor*safety {
		return fmt.Errorf("check time %.4g ms: %w: the floor on %s is %.4g ms (%.3g GB at %.0f GB/s, %.3g GFLOP of %s)",
			timeMS, ErrPhysicallyImpossible, s.Name, floor, bytesMoved/1e9, s.MemBWGBs, flops/1e9, dtype)
	}
	return nil
}

// PeakTFLOPS returns the dense peak of s for a dtype ("fp32", "tf32",
// "fp16", "bf16", "fp8" and torch spellings such as "torch.bfloat16"), the
// dtype whose rate was used (a GPU without FP8 or BF16 units falls back to
// the next wider type), and ErrUnknownDType for anything else. "tf32" means
// fp32 work with TF32 allowed: the larger of the TF32 and FP32 rates.
func (s Specs) PeakTFLOPS(dtype string) (tflops float64, used string, err error) {
	d := canonicalDType(dtype)
	rates := map[string]float64{
		"fp32": s.FP32TFLOPS, "tf32": s.TF32TFLOPS, "fp16": s.FP16TFLOPS,
		"bf16": s.BF16TFLOPS, "fp8": s.FP8TFLOPS,
	}
	var chain []string
	switch d {
	case "fp32":
		chain = []string{"fp32"}
	case "tf32":
		if s.TF32TFLOPS >= s.FP32TFLOPS && s.TF32TFLOPS > 0 {
			return s.TF32TFLOPS, "tf32", nil
		}
		return s.FP32TFLOPS, "fp32", nil
	case "fp16":
		chain = []string{"fp16", "bf16", "fp32"}
	case "bf16":
		chain = []string{"bf16", "fp16", "fp32"}
	case "fp8":
		chain = []string{"fp8", "bf16", "fp16", "fp32"}
	default:
		return 0, "", fmt.Errorf("peak of %s: %w %q", s.Name, ErrUnknownDType, dtype)
	}
	for _, c := range chain {
		if rates[c] > 0 {
			return rates[c], c, nil
		}
	}
	return 0, d, nil
}

func (s Specs) maxPeak() float64 {
	return max(s.FP32TFLOPS, s.TF32TFLOPS, s.FP16TFLOPS, s.BF16TFLOPS, s.FP8TFLOPS)
}

// canonicalDType maps torch and short spellings to fp32, tf32, fp16, bf16
// or fp8; anything else is returned lowercased.
func canonicalDType(dtype string) string {
	d := strings.ToLower(strings.TrimSpace(dtype))
	d = strings.TrimPrefix(d, "torch.")
	switch d {
	case "fp32", "float32", "float", "f32":
		return "fp32"
	case "tf32", "tensorfloat32":
		return "tf32"
	case "fp16", "float16", "half", "f16":
		return "fp16"
	case "bf16", "bfloat16":
		return "bf16"
	}
	if d == "fp8" || strings.HasPrefix(d, "float8") || strings.HasPrefix(d, "e4m3") || strings.HasPrefix(d, "e5m2") {
		return "fp8"
	}
	return d
}

// CanonicalDType is the analyzer's name for a dtype spelling ("torch.bfloat16"
// -> "bf16"); unknown spellings come back lowercased.
func CanonicalDType(dtype string) string { return canonicalDType(dtype) }
