package ncu

import (
	"regexp"
	"slices"
	"strings"
)

// Filter selects the launches that belong to the candidate. Triton kernels
// appear in ncu under their Python function name, a bare identifier
// ("rmsnorm_fwd"); PyTorch and library kernels carry C++ decoration
// ("void at::native::vectorized_elementwise_kernel<4, ...>(int, T2, T3)")
// or library prefixes (cuBLAS "nvjet_...", "cutlass...").
type Filter struct {
	// Names are the candidate's @triton.jit function names. A launch matches
	// when its kernel name is one of them, optionally followed by the
	// signature suffix older Triton versions appended ("_0d1d2de").
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
		return namePattern(f.Names).MatchString(kernel)
	}
	if f.Regex != nil {
		return true
	}
	return !IsHelper(kernel)
}

// NCURegex is the value for `ncu -k regex:...` that preselects the
// candidate's launches ("" = profile every kernel, and let Match drop the
// helpers afterwards). ncu matches it against the function name.
func (f Filter) NCURegex() string {
	if len(f.Names) > 0 {
		return namePattern(f.Names).String()
	}
	if f.Regex != nil {
		return f.Regex.String()
	}
	return ""
}

// namePattern anchors the names: "^(a|b)(_[0-9][0-9a-z]*)?$". Python
// identifiers need no escaping. The group syntax is plain so that ncu's
// regex engine and Go's agree.
func namePattern(names []string) *regexp.Regexp {
	quoted := make([]string, 0, len(names))
	for _, n := range names {
		quoted = append(quoted, regexp.QuoteMeta(n))
	}
	return regexp.MustCompile("^(" + strings.Join(quoted, "|") + ")(_[0-9][0-9a-z]*)?$")
}

// helperPattern matches kernels that are never the candidate's own.
var helperPattern = regexp.MustCompile(`::|<|\(|^void |^nvjet_|^cutlass|^sm\d+_xmma|^ampere_|^volta_|^turing_|^hopper_|^Kernel2$`)

// IsHelper reports whether a kernel name is a PyTorch or library kernel
// (anything with C++ decoration such as at::native:: elementwise, copy,
// fill and reduce kernels; cuBLAS, CUTLASS) rather than a Triton kernel.
func IsHelper(kernel string) bool { return helperPattern.MatchString(kernel) }

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

// KernelNames returns the functions of a Python source that Triton compiles
// as kernels: those decorated with @triton.jit or @jit (also below
// @triton.autotune / @triton.heuristics, and with arguments), and those
// wrapped as triton.jit(fn). Decorators spanning several lines are handled.
// The scan is textual; it does not execute or fully parse the source.
func KernelNames(source string) []string {
	var (
		names      []string
		decorators strings.Builder
		depth      int // open brackets of a decorator spanning lines
	)
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	for _, raw := range strings.Split(source, "\n") {
		line := strings.TrimSpace(stripComment(raw))
		if depth > 0 {
			decorators.WriteString(line)
			if depth += bracketDelta(line); depth <= 0 {
				decorators.WriteByte('\n')
			}
			continue
		}
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "@"):
			decorators.WriteString(line)
			decorators.WriteByte('\n')
			depth = max(0, bracketDelta(line))
			continue
		}
		if m := defPattern.FindStringSubmatch(line); m != nil {
			if jitPattern.MatchString(decorators.String()) {
				add(m[1])
			}
		}
		for _, m := range jitCallPattern.FindAllStringSubmatch(line, -1) {
			add(m[1])
		}
		decorators.Reset()
	}
	return names
}

var (
	defPattern     = regexp.MustCompile(`^(?:async\s+)?def\s+([A-Za-z_]\w*)\s*\(`)
	jitPattern     = regexp.MustCompile(`(?m)^@\s*(?:[A-Za-z_][\w.]*\.)?jit\b`)
	jitCallPattern = regexp.MustCompile(`\btriton\.jit\(\s*([A-Za-z_]\w*)\s*\)`)
)

// stripComment drops a # comment that is not inside a string (good enough
// for decorator and def lines).
func stripComment(line string) string {
	inStr := byte(0)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inStr != 0 && c == '\\':
			i++
		case inStr != 0 && c == inStr:
			inStr = 0
		case inStr == 0 && (c == '"' || c == '\''):
			inStr = c
		case inStr == 0 && c == '#':
			return line[:i]
		}
	}
	return line
}

func bracketDelta(s string) int {
	d := 0
	for _, c := range s {
		switch c {
		case '(', '[', '{':
			d++
		case ')', ']', '}':
			d--
		}
	}
	return d
}
