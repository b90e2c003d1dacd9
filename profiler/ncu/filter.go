package ncu

import (
	"regexp"
	"slices"

	"github.com/kagent-kernels/kagent/profiler/kernels"
)

// Filter selects the launches that belong to the candidate: its own Triton
// kernels, which ncu shows under their Python function names, not the
// PyTorch and library kernels around them (IsHelper).
type Filter struct {
	// Names are the candidate's @triton.jit function names (kernels.Names).
	// A launch matches when its kernel is one of them, optionally with the
	// signature suffix older Triton versions appended (kernels.Pattern).
	Names []string
	// Regex, when set, must also match the kernel name as ncu prints it.
	Regex *regexp.Regexp
}

// Match reports whether a launch's kernel belongs to the candidate. With
// neither Names nor Regex set, every kernel that is not a known helper
// (PyTorch elementwise/copy/fill/reduce kernels, cuBLAS, CUTLASS) matches.
func (f Filter) Match(kernel string) bool {
	if f.Regex != nil && !f.Regex.MatchString(kernel) {
		return false
	}
	if len(f.Names) > 0 {
		return kernels.Pattern(f.Names, "").MatchString(kernel)
	}
	if f.Regex != nil {
		return true
	}
	return !IsHelper(kernel)
}

// NCURegex is the value for `ncu -k regex:...` that preselects the
// candidate's launches ("" = profile every kernel, and let Match drop the
// helpers afterwards). ncu matches it against the function name; the
// names' pattern (kernels.Pattern) is plain enough for ncu's regex engine.
func (f Filter) NCURegex() string {
	if len(f.Names) > 0 {
		return kernels.Pattern(f.Names, "").String()
	}
	if f.Regex != nil {
		return f.Regex.String()
	}
	return ""
}

// libraryPattern matches undecorated library kernels: cuBLAS (nvjet_ and
// the architecture-prefixed GEMMs such as ampere_sgemm_...), CUTLASS.
var libraryPattern = regexp.MustCompile(`^nvjet_|^cutlass|^sm\d+_xmma|^ampere_|^volta_|^turing_|^hopper_|^Kernel2$`)

// IsHelper reports whether a kernel name is a PyTorch or library kernel
// (anything with C++ decoration such as at::native:: elementwise, copy,
// fill and reduce kernels; cuBLAS, CUTLASS) rather than a Triton kernel.
func IsHelper(kernel string) bool {
	return kernels.IsDecorated(kernel) || libraryPattern.MatchString(kernel)
}

// Select returns the launches the filter matches, in ID order.
func (r *Report) Select(f Filter) []Launch {
	var out []Launch
	for _, l := range r.Launches {
		if f.Match(l.Kernel) {
			out = append(out, l)
		}
	}
	slices.SortStableFunc(out, func(a, b Launch) int { return a.ID - b.ID })
	return out
}
