package rocprof

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kagent-kernels/kagent/profiler/kernels"
)

// Filter selects the dispatches that belong to the candidate: its own
// Triton kernels, which rocprofv3 shows under their Python function names,
// not the PyTorch, runtime and library kernels around them (IsHelper).
type Filter struct {
	// Names are the candidate's @triton.jit function names (kernels.Names).
	// A dispatch matches when its kernel is one of them, optionally with the
	// signature suffix older Triton versions appended and a ".kd" symbol
	// suffix (kernels.Pattern).
	Names []string
	// Regex, when set, must also match the kernel name (RE2 syntax; it is
	// also passed to rocprofv3's --kernel-include-regex when Names is empty,
	// so keep it to syntax ECMAScript regexes share).
	Regex *regexp.Regexp
}

// Match reports whether a dispatch's kernel belongs to the candidate.
// With Names, only those names match. Without Names, a kernel matches when
// Regex (if set) matches and it is not a helper (see IsHelper).
func (f Filter) Match(kernel string) bool {
	if f.Regex != nil && !f.Regex.MatchString(kernel) {
		return false
	}
	if len(f.Names) > 0 {
		return kernels.Pattern(f.Names, symbolSuffix).MatchString(kernel)
	}
	return !IsHelper(kernel)
}

// IncludeRegex is the value for rocprofv3's --kernel-include-regex ("" =
// none). rocprofv3 searches it anywhere in the kernel name, so this is a
// preselection that may let extra kernels through; Match decides.
func (f Filter) IncludeRegex() string {
	if len(f.Names) > 0 {
		return kernels.Alternation(f.Names)
	}
	if f.Regex != nil {
		return f.Regex.String()
	}
	return ""
}

func (f Filter) String() string {
	switch {
	case len(f.Names) > 0:
		return "names " + strings.Join(f.Names, ", ")
	case f.Regex != nil:
		return "regex " + f.Regex.String()
	}
	return "every non-helper kernel"
}

// symbolSuffix is what rocprofv3 may append to a kernel's name: the
// code-object symbol's ".kd".
const symbolSuffix = `(\.kd)?`

var (
	// libraryPattern matches runtime and library kernels by prefix
	// (ROCclr's fills and copies, hipBLASLt, composable kernel, rocBLAS).
	libraryPattern = regexp.MustCompile(`^__amd_rocclr_|^Cijk_|^ck_|^hipblaslt|^rocblas`)
	// helperWords are PyTorch helper kernels that need no decoration to be
	// recognised (elementwise, fill, copy).
	helperWords = []string{"elementwise_kernel", "fill", "copy"}
)

// IsHelper reports whether a kernel is a PyTorch, runtime or library
// kernel rather than a Triton kernel: C++ decoration (at::native::...,
// templates, argument lists), runtime prefixes (__amd_rocclr_, Cijk_), or a
// name containing "elementwise_kernel", "fill" or "copy" (any case). A
// Triton kernel whose own name contains "fill" or "copy" must be named in
// Filter.Names to be kept.
func IsHelper(kernel string) bool {
	if kernels.IsDecorated(kernel) || libraryPattern.MatchString(kernel) {
		return true
	}
	low := strings.ToLower(kernel)
	for _, w := range helperWords {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// Window says which of the candidate's dispatches form the profiled call.
// It counts only dispatches the Filter keeps, in Dispatch_Id order, and is
// applied to every pass separately: dispatch ids, and how many dispatches
// warm-up and autotuning made, may differ between passes.
//
// The wrapper script runs the candidate a few times (Triton compiles and
// autotunes on the first calls) and then once more: that last call is the
// one profiled. Pick one of three forms:
//
//   - Window{} takes every dispatch: for a wrapper that runs the call once,
//     or that keeps warm-up out of the profile itself.
//   - Window{Last: n} takes the last n dispatches: the call is the program's
//     final GPU work and launches n kernels of the candidate (the
//     verifier's launch count). Robust to autotuning, which makes an
//     unpredictable number of warm-up dispatches. The recommended form.
//   - Window{Skip: s, Count: n} drops s dispatches (those of the warm-up
//     calls) and takes the next n (0 = all the rest). Only for wrappers
//     whose warm-up makes a known number of dispatches.
type Window struct {
	Skip  int
	Count int
	Last  int
}

// Validate rejects negative fields and Last mixed with Skip or Count.
func (w Window) Validate() error {
	if w.Skip < 0 || w.Count < 0 || w.Last < 0 {
		return fmt.Errorf("check window %+v: %w: negative field", w, ErrConfig)
	}
	if w.Last > 0 && (w.Skip > 0 || w.Count > 0) {
		return fmt.Errorf("check window %+v: %w: Last excludes Skip and Count", w, ErrConfig)
	}
	return nil
}

func (w Window) String() string {
	switch {
	case w.Last > 0:
		return fmt.Sprintf("the last %d dispatches", w.Last)
	case w.Skip > 0 && w.Count > 0:
		return fmt.Sprintf("dispatches %d..%d", w.Skip+1, w.Skip+w.Count)
	case w.Skip > 0:
		return fmt.Sprintf("the dispatches after the first %d", w.Skip)
	case w.Count > 0:
		return fmt.Sprintf("the first %d dispatches", w.Count)
	}
	return "every dispatch"
}

// bounds returns the half-open range [lo, hi) of n matching dispatches
// that the window selects.
func (w Window) bounds(n int) (lo, hi int, err error) {
	switch {
	case w.Last > 0:
		if n < w.Last {
			return 0, 0, fmt.Errorf("%w: %s needed, only %d matched", ErrNoKernels, w, n)
		}
		return n - w.Last, n, nil
	case w.Count > 0:
		if n < w.Skip+w.Count {
			return 0, 0, fmt.Errorf("%w: %s needed, only %d matched", ErrNoKernels, w, n)
		}
		return w.Skip, w.Skip + w.Count, nil
	}
	if n <= w.Skip {
		return 0, 0, fmt.Errorf("%w: %s needed, only %d matched", ErrNoKernels, w, n)
	}
	return w.Skip, n, nil
}

// SelectDispatches returns the trace dispatches of the profiled call: those
// the filter keeps, cut by the window.
func SelectDispatches(ds []Dispatch, f Filter, w Window) ([]Dispatch, error) {
	var kept []Dispatch
	for _, d := range ds {
		if f.Match(d.Kernel) {
			kept = append(kept, d)
		}
	}
	lo, hi, err := w.bounds(len(kept))
	if err != nil {
		return nil, fmt.Errorf("select dispatches (%s): %w; kernels seen: %s", f, err, kernelList(ds))
	}
	return kept[lo:hi], nil
}

// SelectCounters is SelectDispatches for a counter pass.
func SelectCounters(cs []CounterDispatch, f Filter, w Window) ([]CounterDispatch, error) {
	var kept []CounterDispatch
	var names []string
	for _, c := range cs {
		names = append(names, c.Kernel)
		if f.Match(c.Kernel) {
			kept = append(kept, c)
		}
	}
	lo, hi, err := w.bounds(len(kept))
	if err != nil {
		return nil, fmt.Errorf("select counter dispatches (%s): %w; kernels seen: %s", f, err, nameList(names))
	}
	return kept[lo:hi], nil
}

// Join lines a counter pass up with the kernel trace: the i-th selected
// dispatch of the pass must be the i-th of the trace (the same kernel).
// This is the join on (kernel name, ordinal) that rocprofv3's multi-pass
// output needs, restricted to the profiled call. It returns the pass's
// counters summed over the call.
func Join(trace []Dispatch, pass []CounterDispatch) (map[string]float64, error) {
	if len(trace) != len(pass) {
		return nil, fmt.Errorf("join with kernel trace: %w: %d dispatches in the trace, %d here", ErrMismatch, len(trace), len(pass))
	}
	sum := map[string]float64{}
	for i := range trace {
		if trace[i].Kernel != pass[i].Kernel {
			return nil, fmt.Errorf("join with kernel trace: %w: dispatch %d of the call is %q in the trace and %q here",
				ErrMismatch, i+1, trace[i].Kernel, pass[i].Kernel)
		}
		for k, v := range pass[i].Counters {
			sum[k] += v
		}
	}
	return sum, nil
}

func kernelList(ds []Dispatch) string {
	names := make([]string, 0, len(ds))
	for _, d := range ds {
		names = append(names, d.Kernel)
	}
	return nameList(names)
}

// nameList lists distinct names with counts, at most 8, for messages.
func nameList(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	count := map[string]int{}
	var order []string
	for _, n := range names {
		if count[n] == 0 {
			order = append(order, n)
		}
		count[n]++
	}
	var parts []string
	for i, n := range order {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("... %d more", len(order)-8))
			break
		}
		shown := n
		if len(shown) > 80 {
			shown = shown[:77] + "..."
		}
		parts = append(parts, fmt.Sprintf("%q x%d", shown, count[n]))
	}
	return strings.Join(parts, ", ")
}
