package ncu

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kagent-kernels/kagent/roofline"
)

// Aggregate folds the launches of one call into roofline metrics: times,
// bytes and FLOPs are summed over the call's kernels; percentages, rates
// and per-launch attributes (registers, occupancy limits) are averaged,
// weighted by each launch's duration. keep limits Raw to those metrics (and
// nothing else: ncu adds .avg/.min/.max expansions); nil keeps every metric column
// except ncu's device, link and NUMA attributes.
func Aggregate(launches []Launch, keep []string) (roofline.Metrics, error) {
	if len(launches) == 0 {
		return roofline.Metrics{}, fmt.Errorf("aggregate ncu launches: %w", ErrNoKernels)
	}
	m := roofline.Metrics{Source: "ncu", Raw: map[string]float64{}}
	weights := make([]float64, len(launches))
	var total float64
	for i, l := range launches {
		weights[i] = l.Values[MetricTime]
		total += weights[i]
		if !slices.Contains(m.Kernels, l.Kernel) {
			m.Kernels = append(m.Kernels, l.Kernel)
		}
	}
	if total <= 0 { // no durations: plain average
		for i := range weights {
			weights[i] = 1
		}
		total = float64(len(weights))
		m.Warnings = append(m.Warnings, "no "+MetricTime+": percentages are plain averages")
	}

	names := map[string]bool{}
	for _, l := range launches {
		for k := range l.Values {
			if keepMetric(k, keep) {
				names[k] = true
			}
		}
	}
	for k := range names {
		if averaged(k) {
			var sum, w float64
			for i, l := range launches {
				if v, ok := l.Values[k]; ok {
					sum += v * weights[i]
					w += weights[i]
				}
			}
			if w > 0 {
				m.Raw[k] = sum / w
			}
			continue
		}
		var sum float64
		for _, l := range launches {
			sum += l.Values[k]
		}
		m.Raw[k] = sum
	}

	raw := m.Raw
	m.TimeMS = raw[MetricTime] / 1e6
	m.BytesRead = raw[MetricDRAMRead]
	m.BytesWrite = raw[MetricDRAMWrite]
	m.ComputeSOL = raw[MetricComputeSOL]
	m.MemorySOL = raw[MetricMemorySOL]
	m.TensorPipePct = max(raw[metricTensorElap], raw[metricTensorAct])
	m.FLOPs, m.DType = flops(raw)
	for _, k := range []string{MetricTime, MetricComputeSOL, MetricMemorySOL, MetricDRAMRead, MetricDRAMWrite} {
		if _, ok := raw[k]; !ok && (keep == nil || slices.Contains(keep, k)) {
			m.Warnings = append(m.Warnings, "ncu did not report "+k)
		}
	}
	return m, nil
}

// flops totals the FLOP counters and names the dtype that did most of them.
func flops(raw map[string]float64) (float64, string) {
	parts := map[string]float64{
		"fp32": raw[fp32Add] + raw[fp32Mul] + 2*raw[fp32FMA],
		// Triton packs fp16/bf16 arithmetic into HFMA2/HADD2/HMUL2, which
		// these counters count once for two lanes (measured on the H200:
		// an fp16 axpy of N elements gives hfma = N/2), hence the 2x.
		"fp16": 2 * (raw[fp16Add] + raw[fp16Mul] + 2*raw[fp16FMA]),
		"fp64": raw[fp64Add] + raw[fp64Mul] + 2*raw[fp64FMA],
	}
	for _, t := range tensorOps {
		parts[t.dtype] += raw[t.metric]
	}
	var total, best float64
	dtype := ""
	for _, d := range []string{"fp32", "tf32", "fp16", "bf16", "fp8", "fp64"} {
		total += parts[d]
		if parts[d] > best {
			best, dtype = parts[d], d
		}
	}
	return total, dtype
}

// averaged reports whether a metric is a percentage, a rate or a per-launch
// attribute (averaged over launches) rather than a count (summed).
func averaged(name string) bool {
	return strings.Contains(name, "pct") || strings.HasSuffix(name, ".ratio") ||
		strings.Contains(name, "per_second") || strings.Contains(name, "average") ||
		strings.HasPrefix(name, "launch__") || strings.HasPrefix(name, "device__") ||
		strings.HasPrefix(name, "sm__maximum_warps") || strings.HasPrefix(name, "smsp__maximum_warps") ||
		strings.HasSuffix(name, ".peak_sustained")
}

var noisePrefixes = []string{"device__", "nvlink__", "numa__", "c2clink__", "profiler__"}

func keepMetric(name string, keep []string) bool {
	if keep == nil {
		for _, p := range noisePrefixes {
			if strings.HasPrefix(name, p) {
				return false
			}
		}
		return true
	}
	return slices.Contains(keep, name)
}
