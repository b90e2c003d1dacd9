package rocprof

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kagent-kernels/kagent/roofline"
)

// Source is the Metrics.Source of rocprof metrics.
const Source = "rocprof"

// Raw keys of the derived values (next to the counters themselves).
const (
	RawKernelTimeNS   = "kernel_time_ns"
	RawDispatches     = "dispatches"
	RawAchievedGBs    = "achieved_gbs"
	RawVALUFLOPsEst   = "valu_flops_est"
	RawMFMAFLOPs      = "mfma_flops"
	RawVALUSOL        = "valu_sol_pct"
	RawMFMASOL        = "mfma_sol_pct"
	RawVALUPeakTFLOPS = "valu_peak_tflops"
	RawL2HitPct       = "l2_hit_pct"
)

// Call is what the passes measured for the profiled call, joined.
type Call struct {
	// Dispatches are the call's dispatches from the kernel trace.
	Dispatches []Dispatch
	// Counters are every counter of every pass, summed over the call.
	Counters map[string]float64
	// Agent is the profiled GPU from agent_info.csv (nil = unknown).
	Agent *Agent
	// DType is the dtype of the work ("bf16", "torch.float32", ...).
	DType string
}

// BuildMetrics turns a profiled call into roofline metrics against the
// GPU's specs:
//
//   - TimeMS: the sum of End-Start over the call's dispatches (kernel trace).
//   - BytesRead/BytesWrite: FETCH_SIZE and WRITE_SIZE, which rocprofv3
//     reports in KB, times 1024.
//   - MemorySOL: achieved bandwidth, (read+write bytes)/time, against
//     Specs.MemBWGBs.
//   - ComputeSOL: the larger of the VALU and MFMA rates against their peaks
//     (the rocprof-compute Speed-of-Light definitions, work/time/peak),
//     never an instruction-mix ratio. VALU: SQ_INSTS_VALU counts one per
//     wavefront instruction, so SQ_INSTS_VALU x wave size x 2 is the FLOPs
//     the VALU would do if every instruction were a full-width FMA -- an
//     ESTIMATE that counts integer and address arithmetic too, read as the
//     share of VALU issue slots used. Its peak is the non-packed vector rate
//     max clock x CUs x 128 from agent_info.csv (81.7 TFLOP/s on an
//     MI300X); without agent_info it falls back to Specs.FP32TFLOPS with a
//     warning. MFMA: SQ_INSTS_VALU_MFMA_MOPS_<T> x 512 FLOPs against the
//     specs' dense peak of T; it is also TensorPipePct.
//   - FLOPs: the VALU estimate plus the MFMA FLOPs.
//   - Raw: every counter summed over the call, plus the derived values
//     under the Raw* keys (l2_hit_pct = TCC_HIT/(TCC_HIT+TCC_MISS)).
func BuildMetrics(c Call, s roofline.Specs) roofline.Metrics {
	m := roofline.Metrics{Source: Source, Raw: map[string]float64{}}
	if c.DType != "" {
		m.DType = roofline.CanonicalDType(c.DType)
	}
	var timeNS float64
	for _, d := range c.Dispatches {
		timeNS += float64(d.DurationNS())
		if !slices.Contains(m.Kernels, d.Kernel) {
			m.Kernels = append(m.Kernels, d.Kernel)
		}
	}
	for k, v := range c.Counters {
		m.Raw[k] = v
	}
	m.TimeMS = timeNS / 1e6
	m.Raw[RawKernelTimeNS] = timeNS
	m.Raw[RawDispatches] = float64(len(c.Dispatches))
	if timeNS <= 0 {
		m.Warnings = append(m.Warnings, "the kernel trace shows no kernel time: SOL not computed")
	}

	// Memory.
	fetch, okF := c.Counters[CounterFetchSize]
	write, okW := c.Counters[CounterWriteSize]
	m.BytesRead, m.BytesWrite = fetch*1024, write*1024
	switch {
	case !okF || !okW:
		m.Warnings = append(m.Warnings, "FETCH_SIZE or WRITE_SIZE was not collected: memory SOL not computed")
	case fetch+write == 0:
		m.Warnings = append(m.Warnings, "FETCH_SIZE and WRITE_SIZE are 0 (rocprofv3 reports 0 on gfx12): memory SOL not computed")
	case timeNS > 0:
		gbs := (m.BytesRead + m.BytesWrite) / timeNS // bytes/ns = GB/s
		m.Raw[RawAchievedGBs] = gbs
		if s.MemBWGBs > 0 {
			m.MemorySOL = 100 * gbs / s.MemBWGBs
			if m.MemorySOL > 100 {
				m.Warnings = append(m.Warnings, fmt.Sprintf(
					"FETCH_SIZE+WRITE_SIZE over kernel time is %.0f GB/s, above the %.0f GB/s peak: they count traffic "+
						"the Infinity Cache may have served", gbs, s.MemBWGBs))
			}
		} else {
			m.Warnings = append(m.Warnings, fmt.Sprintf("no peak bandwidth for %s: memory SOL not computed", s.Name))
		}
	}

	// L2.
	hit, miss := c.Counters[CounterL2Hit], c.Counters[CounterL2Miss]
	if hit+miss > 0 {
		m.Raw[RawL2HitPct] = 100 * hit / (hit + miss)
	}

	// Compute: VALU.
	wave := 64
	if c.Agent != nil && c.Agent.WaveSize > 0 {
		wave = c.Agent.WaveSize
	} else if s.WarpSize > 0 {
		wave = s.WarpSize
	}
	var valuSOL, mfmaSOL, mfmaFLOPs float64
	if valu, ok := c.Counters[CounterVALU]; ok {
		est := valu * float64(wave) * 2
		m.Raw[RawVALUFLOPsEst] = est
		m.FLOPs += est
		peak, warn := valuPeakTFLOPS(c.Agent, s)
		if warn != "" {
			m.Warnings = append(m.Warnings, warn)
		}
		if peak > 0 && timeNS > 0 {
			m.Raw[RawVALUPeakTFLOPS] = peak
			valuSOL = 100 * est / timeNS / (peak * 1e3) // FLOP/ns = GFLOP/s
			m.Raw[RawVALUSOL] = valuSOL
		}
	} else {
		m.Warnings = append(m.Warnings, "SQ_INSTS_VALU was not collected: VALU SOL not computed")
	}

	// Compute: MFMA, one counter per dtype collected.
	var mfmaNames []string
	for k := range c.Counters {
		if strings.HasPrefix(k, mfmaCounterPrefix) {
			mfmaNames = append(mfmaNames, k)
		}
	}
	sort.Strings(mfmaNames)
	for _, k := range mfmaNames {
		flops := c.Counters[k] * 512
		mfmaFLOPs += flops
		t := strings.TrimPrefix(k, mfmaCounterPrefix)
		peak := mfmaPeakTFLOPS(t, s)
		if peak <= 0 {
			if flops > 0 {
				m.Warnings = append(m.Warnings, fmt.Sprintf("no %s matrix peak for %s: %s left out of the MFMA SOL", t, s.Name, k))
			}
			continue
		}
		if timeNS > 0 {
			mfmaSOL += 100 * flops / timeNS / (peak * 1e3)
		}
	}
	if len(mfmaNames) > 0 {
		m.FLOPs += mfmaFLOPs
		m.Raw[RawMFMAFLOPs] = mfmaFLOPs
		m.Raw[RawMFMASOL] = mfmaSOL
		m.TensorPipePct = mfmaSOL
	}
	m.ComputeSOL = max(valuSOL, mfmaSOL)
	if valuSOL > 100 {
		m.Warnings = append(m.Warnings, fmt.Sprintf(
			"the VALU estimate is %.0f%% of the VALU peak: the peak (clock and CUs from agent_info.csv, or the specs) is too low", valuSOL))
	}
	return m
}

// valuPeakTFLOPS is the non-packed vector peak: max clock x CUs x 64
// lanes x 2 (FMA), rocprof-compute's VALU FLOPs peak. Without a clock it
// falls back to the specs' FP32 rate, with a warning.
func valuPeakTFLOPS(a *Agent, s roofline.Specs) (tflops float64, warning string) {
	if a != nil && a.MaxClockMHz > 0 && a.CUs > 0 {
		return a.MaxClockMHz * float64(a.CUs) * 128 / 1e6, ""
	}
	if s.FP32TFLOPS > 0 {
		return s.FP32TFLOPS, fmt.Sprintf("no clock and CU count from agent_info.csv: VALU SOL is against the specs' "+
			"FP32 rate of %s (%.1f TFLOP/s), which counts packed FP32 on CDNA3 and halves the VALU SOL", s.Name, s.FP32TFLOPS)
	}
	return 0, fmt.Sprintf("no VALU peak for %s: VALU SOL not computed", s.Name)
}

// mfmaPeakTFLOPS is the dense matrix peak of s for a MOPS counter's dtype
// suffix (F16, BF16, F8, XF32, F32); 0 when the specs have none.
func mfmaPeakTFLOPS(suffix string, s roofline.Specs) float64 {
	switch suffix {
	case "F16":
		return s.FP16TFLOPS
	case "BF16":
		return s.BF16TFLOPS
	case "F8", "BF8":
		return s.FP8TFLOPS
	case "XF32":
		return s.TF32TFLOPS
	case "F32":
		// The F32 MFMA rate: 256 FLOP/clk/CU on gfx942 and gfx950, the
		// specs' (packed) FP32 figure.
		return s.FP32TFLOPS
	}
	return 0
}
