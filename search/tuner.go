package search

import (
	"context"
	"fmt"

	"github.com/kagent-kernels/kagent/search/tune"
)

// Variant is one knob setting of a kernel: its label ("BLOCK=2048,
// num_warps=8") and the rewritten source.
type Variant struct {
	Label  string
	Source string
}

// Tuner proposes knob variants of a kernel without an LLM: launch and
// constexpr settings (block sizes, num_warps, num_stages) found in the
// source. Variants must be deterministic for a given source and max, so a
// resumed round proposes the same ones. It backs the tune strategy, the
// proposer used when no LLM is configured, and the final polish.
type Tuner interface {
	Variants(ctx context.Context, source string, max int) ([]Variant, error)
}

// TunerFunc adapts a function to Tuner.
type TunerFunc func(ctx context.Context, source string, max int) ([]Variant, error)

// Variants calls f.
func (f TunerFunc) Variants(ctx context.Context, source string, max int) ([]Variant, error) {
	return f(ctx, source, max)
}

// KnobTuner is package tune's Tuner: the kernel's knobs found through the
// Python AST (tune.Finder), and variants around their current values, most
// promising first.
type KnobTuner struct {
	Finder tune.Finder
}

// Variants finds the knobs of source and proposes up to max edited sources.
// A kernel without knobs has no variants (and no error).
func (t KnobTuner) Variants(ctx context.Context, source string, max int) ([]Variant, error) {
	knobs, err := t.Finder.Knobs(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("find knobs: %w", err)
	}
	if len(knobs) == 0 {
		return nil, nil
	}
	vs, err := tune.Variants(source, knobs, max)
	if err != nil {
		return nil, fmt.Errorf("knob variants: %w", err)
	}
	return variantsOf(vs), nil
}

// variantsOf are package tune's variants as the strategies take them.
func variantsOf(vs []tune.Variant) []Variant {
	out := make([]Variant, len(vs))
	for i, v := range vs {
		out[i] = Variant{Label: v.Label, Source: v.Source}
	}
	return out
}

// Spacer is a Tuner that also enumerates a kernel's whole search space
// (the halving strategy): every variant of the space, deterministic for a
// given source and max.
type Spacer interface {
	Tuner
	Space(ctx context.Context, source string, max int) ([]Variant, error)
}

// Space finds the knobs and autotune configs of source and lists up to max
// variants of its space (tune.Space).
func (t KnobTuner) Space(ctx context.Context, source string, max int) ([]Variant, error) {
	found, err := t.Finder.Find(ctx, source)
	if err != nil {
		return nil, fmt.Errorf("find knobs: %w", err)
	}
	vs, err := tune.Space(source, found, max)
	if err != nil {
		return nil, fmt.Errorf("knob space: %w", err)
	}
	return variantsOf(vs), nil
}

// Interface guards
var (
	_ Tuner  = TunerFunc(nil)
	_ Spacer = KnobTuner{}
)
