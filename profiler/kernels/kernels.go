// Package kernels is what the profilers (ncu, rocprof) share about a
// candidate's kernels: the @triton.jit functions its source defines, the
// names they take once compiled, the helper kernels (PyTorch, libraries)
// that are never the candidate's, and a file name for its profile. Each
// profiler adds its tool's syntax and its vendor's library names.
package kernels

import (
	"regexp"
	"slices"
	"strings"
)

// Names returns the functions of a Python source that Triton compiles as
// kernels: those decorated with @triton.jit or @jit (also below
// @triton.autotune / @triton.heuristics, and with arguments), and those
// wrapped as triton.jit(fn). Decorators spanning several lines are handled.
// The scan is textual; it does not execute or fully parse the source.
func Names(source string) []string {
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

// Alternation is the names as one regular expression group, "(a|b)",
// matching any of them anywhere. Python identifiers need no escaping; they
// are quoted all the same.
func Alternation(names []string) string {
	quoted := make([]string, 0, len(names))
	for _, n := range names {
		quoted = append(quoted, regexp.QuoteMeta(n))
	}
	return "(" + strings.Join(quoted, "|") + ")"
}

// Pattern matches the names as a profiler reports the compiled kernels:
// the whole name, optionally followed by the signature suffix older Triton
// versions appended ("_0d1d2de") and then by symbolSuffix, a regular
// expression for what the tool appends ("" = nothing; rocprofv3's
// `(\.kd)?`). The syntax is plain so that the tools' regex engines and
// Go's agree: "^(a|b)(_[0-9][0-9a-z]*)?$".
func Pattern(names []string, symbolSuffix string) *regexp.Regexp {
	return regexp.MustCompile("^" + Alternation(names) + "(_[0-9][0-9a-z]*)?" + symbolSuffix + "$")
}

// decoratedPattern matches C++ kernel names: namespaces, templates and
// argument lists ("void at::native::vectorized_elementwise_kernel<4, ...>(int, T2, T3)").
var decoratedPattern = regexp.MustCompile(`::|<|\(|^void `)

// IsDecorated reports whether a kernel name carries C++ decoration, which a
// Triton kernel, named after its Python function, never does: such kernels
// are PyTorch's (elementwise, copy, fill, reduce) or a library's. Each
// profiler adds its vendor's undecorated library prefixes.
func IsDecorated(kernel string) bool { return decoratedPattern.MatchString(kernel) }

// FileName makes a candidate ID safe for the name of a profile's files:
// letters, digits, '-' and '_' are kept, other bytes become '_', and an
// empty ID becomes "candidate".
func FileName(id string) string {
	b := []byte(id)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 {
		return "candidate"
	}
	return string(b)
}
