package rocprof

import (
	"fmt"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/roofline"
)

// Pass is one rocprofv3 run of the program: the kernel trace (no
// counters) or one group of counters. Each pass is its own process with
// its own timeout.
type Pass struct {
	// Name appears in errors and fallback reasons ("FETCH_SIZE pass timed out").
	Name string
	// Counters are passed to --pmc; none means the kernel-trace pass.
	Counters []string
	// Timeout bounds the pass (0 = Config.PassTimeout).
	Timeout time.Duration
}

// TracePassName names the kernel-trace pass.
const TracePassName = "kernel trace"

// IsTrace reports whether p is the kernel-trace pass.
func (p Pass) IsTrace() bool { return len(p.Counters) == 0 }

// Counter names.
const (
	CounterWaves      = "SQ_WAVES"
	CounterVALU       = "SQ_INSTS_VALU"
	CounterSALU       = "SQ_INSTS_SALU"
	CounterVMemRead   = "SQ_INSTS_VMEM_RD"
	CounterVMemWrite  = "SQ_INSTS_VMEM_WR"
	CounterLDS        = "SQ_INSTS_LDS"
	CounterL2Hit      = "TCC_HIT_sum"
	CounterL2Miss     = "TCC_MISS_sum"
	CounterFetchSize  = "FETCH_SIZE" // KB read from memory
	CounterWriteSize  = "WRITE_SIZE" // KB written to memory
	mfmaCounterPrefix = "SQ_INSTS_VALU_MFMA_MOPS_"
)

// DefaultPasses returns the four counter passes for a gfx target (the
// specs' Target, e.g. "gfx942") and the dtype of the work:
//
//  1. SQ: SQ_WAVES, SQ_INSTS_VALU, SQ_INSTS_SALU, SQ_INSTS_VMEM_RD,
//     SQ_INSTS_VMEM_WR, SQ_INSTS_LDS and, on CDNA targets with matrix
//     cores, the MFMA counter of the dtype (see MFMACounter): seven SQ
//     counters at most.
//  2. TCC: TCC_HIT_sum, TCC_MISS_sum and the L2-to-memory read and write
//     requests (TCC_EA0_RDREQ_sum/TCC_EA0_WRREQ_sum on gfx94x and gfx950,
//     where the TCC_EA_* names are not defined; TCC_EA_* elsewhere). Four
//     TCC counters: the TCC budget of one pass on gfx908-gfx942.
//  3. FETCH_SIZE alone and 4. WRITE_SIZE alone: each is derived from
//     several TCC_EA0 counters on gfx942, and together, or with other TCC
//     counters, they exceed the TCC budget (error 38) or hang.
func DefaultPasses(target, dtype string) []Pass {
	sq := []string{CounterWaves, CounterVALU, CounterSALU, CounterVMemRead, CounterVMemWrite, CounterLDS}
	if c := MFMACounter(target, dtype); c != "" {
		sq = append(sq, c)
	}
	rd, wr := "TCC_EA_RDREQ_sum", "TCC_EA_WRREQ_sum"
	if t := gfx(target); strings.HasPrefix(t, "gfx94") || strings.HasPrefix(t, "gfx95") {
		rd, wr = "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum"
	}
	return []Pass{
		{Name: "SQ", Counters: sq},
		{Name: "TCC", Counters: []string{CounterL2Hit, CounterL2Miss, rd, wr}},
		{Name: CounterFetchSize, Counters: []string{CounterFetchSize}},
		{Name: CounterWriteSize, Counters: []string{CounterWriteSize}},
	}
}

// MFMACounter is the SQ_INSTS_VALU_MFMA_MOPS_<T> counter (MFMA operations
// of dtype T in units of 512 FLOPs) for a gfx target and dtype, or "" when
// the target has no matrix cores known to this package (RDNA, unknown
// targets) or no MFMA of that dtype. fp32 work counts F32; "tf32" counts
// XF32 on gfx940-gfx942 (the only targets with xf32 MFMA) and F32 elsewhere.
func MFMACounter(target, dtype string) string {
	t := gfx(target)
	cdna3 := t == "gfx940" || t == "gfx941" || t == "gfx942"
	cdna4 := t == "gfx950"
	if !(t == "gfx90a" || cdna3 || cdna4) {
		return ""
	}
	var suffix string
	switch roofline.CanonicalDType(dtype) {
	case "fp16":
		suffix = "F16"
	case "bf16":
		suffix = "BF16"
	case "fp8":
		if !cdna3 && !cdna4 {
			return ""
		}
		suffix = "F8"
	case "tf32":
		suffix = "F32"
		if cdna3 {
			suffix = "XF32"
		}
	case "int8":
		suffix = "I8"
	case "fp64", "float64", "double":
		suffix = "F64"
	default:
		suffix = "F32"
	}
	return mfmaCounterPrefix + suffix
}

// gfx normalises a target: "gfx942:sramecc+:xnack-" -> "gfx942".
func gfx(target string) string {
	t := strings.ToLower(strings.TrimSpace(target))
	if i := strings.IndexByte(t, ':'); i >= 0 {
		t = t[:i]
	}
	return t
}

// validate checks a counter pass's names.
func (p Pass) validate() error {
	if strings.TrimSpace(p.Name) == "" {
		return fmt.Errorf("check pass: %w: a pass needs a name", ErrConfig)
	}
	if p.Timeout < 0 {
		return fmt.Errorf("check %s pass: %w: negative timeout", p.Name, ErrConfig)
	}
	for _, c := range p.Counters {
		if c == "" || strings.ContainsAny(c, ", \t\n") || strings.HasPrefix(c, "-") {
			return fmt.Errorf("check %s pass: %w: bad counter name %q", p.Name, ErrConfig, c)
		}
	}
	return nil
}

// outputSuffix is the file name ending of the CSV a pass must write.
func (p Pass) outputSuffix() string {
	if p.IsTrace() {
		return "kernel_trace.csv"
	}
	return "counter_collection.csv"
}

// outputPrefix is the -o value of every pass.
const outputPrefix = "kagent"

// Args returns rocprofv3's arguments for the pass (without the binary):
//
//	--kernel-trace | --pmc C1 C2 ...
//	[--kernel-include-regex RE] -d OUTDIR -o kagent --output-format csv
//	-- PYTHON SCRIPT ARGS...
//
// --output-format csv is explicit because ROCm 7 defaults to rocpd
// (SQLite). The files land in OUTDIR (possibly under a host or pid
// sub-directory); Collect globs for them.
func (p Pass) Args(outDir, includeRegex string, program []string) []string {
	var a []string
	if p.IsTrace() {
		a = append(a, "--kernel-trace")
	} else {
		a = append(a, "--pmc")
		a = append(a, p.Counters...)
	}
	if includeRegex != "" {
		a = append(a, "--kernel-include-regex", includeRegex)
	}
	a = append(a, "-d", outDir, "-o", outputPrefix, "--output-format", "csv", "--")
	return append(a, program...)
}

// dirName is the pass's output directory name under the profile's dir.
func (p Pass) dirName(i int) string {
	b := []byte(strings.ToLower(p.Name))
	for j, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[j] = '_'
		}
	}
	return fmt.Sprintf("pass%d_%s", i, b)
}
