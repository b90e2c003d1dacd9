package search

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Settings are what the strategies read from a run's configuration
// (strategy_config and divergence_threshold).
type Settings struct {
	// NumTopKernels is the beam's width (beam_search).
	NumTopKernels int
	// NumBottlenecks is the directions explored per beam member (beam_search).
	NumBottlenecks int
	// NumInspirations is how many elites of other cells a slot shows with
	// its parent (elites).
	NumInspirations int
	// MaxVariants bounds the knob variants a tune round evaluates.
	MaxVariants int
	// DivergencePct drops beam members slower than the best by more than this.
	DivergencePct float64
	// Eta is halving's reduction factor: each rung keeps the fastest 1/Eta.
	Eta int
	// Finalists is how many screened variants autotune verifies and times
	// in full after a walk.
	Finalists int
}

// Spec describes a registered strategy.
type Spec struct {
	// Name is what strategy: in a config and --strategy select.
	Name string
	// Summary is one line for help and errors.
	Summary string
	// NeedsLLM is whether the strategy proposes through a language model.
	NeedsLLM bool
	// Searches is false for a strategy that runs no search rounds (noop).
	Searches bool
	// Check reports problems with the settings, each saying what to change.
	Check func(Settings) []string
	// New builds the strategy; tuner is nil where no tuner is available.
	New func(Settings, Tuner) (Strategy, error)
}

// ErrUnknown is returned for a name no strategy is registered under.
var ErrUnknown = errors.New("unknown strategy")

// ErrNoTuner is returned by a strategy that needs a tuner and got none.
var ErrNoTuner = errors.New("the strategy needs a tuner")

var registry []Spec

// Register adds a strategy. It is meant to be called from the init of the
// strategy's file and panics on an empty name, a name registered twice, or a
// strategy that searches without a New: each is a programming error.
func Register(s Spec) {
	switch {
	case s.Name == "":
		panic("search: Register with an empty name")
	case s.Searches && s.New == nil:
		panic("search: strategy " + s.Name + " searches but has no New")
	}
	if _, ok := Lookup(s.Name); ok {
		panic("search: strategy " + s.Name + " registered twice")
	}
	registry = append(registry, s)
}

// Lookup returns the strategy registered under name.
func Lookup(name string) (Spec, bool) {
	i := slices.IndexFunc(registry, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return registry[i], true
}

// Names lists the registered strategies, sorted.
func Names() []string {
	out := make([]string, len(registry))
	for i, s := range registry {
		out[i] = s.Name
	}
	slices.Sort(out)
	return out
}

// NeedsLLM reports whether the named strategy proposes through an LLM
// (false for an unknown name).
func NeedsLLM(name string) bool {
	s, ok := Lookup(name)
	return ok && s.NeedsLLM
}

// WithoutLLM reports whether the named strategy searches without a language
// model (tune): no client is built for it and its dry run renders no
// prompts. A strategy that runs no rounds (noop) is not one: its dry run
// renders, and with a configured model sends, a greedy round's prompts.
func WithoutLLM(name string) bool {
	s, ok := Lookup(name)
	return ok && s.Searches && !s.NeedsLLM
}

// Searching lists the registered strategies that run search rounds, sorted.
func Searching() []string {
	var out []string
	for _, name := range Names() {
		if Searches(name) {
			out = append(out, name)
		}
	}
	return out
}

// Searches reports whether the named strategy runs search rounds.
func Searches(name string) bool {
	s, ok := Lookup(name)
	return ok && s.Searches
}

// Check reports what is wrong with a strategy name and its settings, each
// problem saying what to change.
func Check(name string, set Settings) []string {
	s, ok := Lookup(name)
	if !ok {
		return []string{fmt.Sprintf("strategy %q is not one of %s", name, strings.Join(Names(), ", "))}
	}
	if s.Check == nil {
		return nil
	}
	return s.Check(set)
}

// New builds the named strategy.
func New(name string, set Settings, tuner Tuner) (Strategy, error) {
	s, ok := Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q (one of %s)", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	if s.New == nil {
		return nil, fmt.Errorf("strategy %s runs no search rounds", name)
	}
	return s.New(set, tuner)
}
