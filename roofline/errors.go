package roofline

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors of the package.
var (
	// ErrUnknownGPU is returned (wrapped in *UnknownGPUError) when no entry of
	// the specs database matches a device name.
	ErrUnknownGPU = errors.New("unknown gpu")
	// ErrInvalidSpecs is returned when a specs file or entry is malformed.
	ErrInvalidSpecs = errors.New("invalid gpu specs")
	// ErrUnknownDType is returned for a data type the analyzer has no peak for.
	ErrUnknownDType = errors.New("unknown dtype")
)

// UnknownGPUError says that a device name matched no entry, or matched
// several equally well, and lists the closest known names.
type UnknownGPUError struct {
	// Query is the name that was looked up.
	Query string
	// Ambiguous is set when several entries matched (Candidates lists them).
	Ambiguous bool
	// Candidates are the closest known names, best first.
	Candidates []string
	// Hint is an extra line of advice (e.g. "pass the gfx target").
	Hint string
}

func (e *UnknownGPUError) Error() string {
	var b strings.Builder
	if e.Ambiguous {
		fmt.Fprintf(&b, "look up gpu %q: ambiguous, it matches %s", e.Query, strings.Join(quoteAll(e.Candidates), ", "))
	} else {
		fmt.Fprintf(&b, "look up gpu %q: %v", e.Query, ErrUnknownGPU)
		if len(e.Candidates) > 0 {
			fmt.Fprintf(&b, "; closest known: %s", strings.Join(quoteAll(e.Candidates), ", "))
		}
	}
	if e.Hint != "" {
		b.WriteString("; ")
		b.WriteString(e.Hint)
	}
	b.WriteString(" (set gpu_name to a known name, or add an entry with --specs-file; `kagent specs` lists them)")
	return b.String()
}

// Unwrap lets errors.Is(err, ErrUnknownGPU) hold.
func (e *UnknownGPUError) Unwrap() error { return ErrUnknownGPU }

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

// ErrPhysicallyImpossible is returned by CheckPhysical for a time faster than
// the hardware allows.
var ErrPhysicallyImpossible = errors.New("faster than the physical limit")
