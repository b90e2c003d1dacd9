// Package search decides what each round of an optimization run evaluates:
// the strategies (greedy, beam search, elites, tune, autotune, halving), the registry that names them
// and says which need a language model, and the state a run carries from
// round to round.
//
// A strategy sees the run's candidates of earlier rounds (History), picks
// the round's slots (each a list of parents: the kernel rewritten or tuned
// first, then any kernels shown alongside it) and learns from the round's
// outcome. Strategies are deterministic for the same history, so a resumed
// run picks exactly what the interrupted one would have.
//
// The loop (package agent) drives the strategy through the Strategy
// interface only: each round it asks Slots, makes a candidate of each slot
// and refines it, decides promotions, then calls Update. A slot with a
// Variant is evaluated as it is (no LLM); a slot with Retime times an
// earlier candidate again with the slot's Budget (halving's later rungs; a
// Budget below 1 is a screening timing, never promoted on); any other slot
// is an LLM rewrite of its first parent along the Rank-th of the bottlenecks diagnosed for
// that parent (one diagnosis per parent and round, asking for as many
// directions as the parent has slots), with the other parents shown in the
// prompt. Rank runs from 1; Index numbers the round's slots from 1 and
// names their candidates (r<round>c<index>).
//
// # Elites
//
// The elites strategy is MAP-Elites-like: State.Archive keeps, per
// behaviour cell, the fastest correct kernel of the run (its elite). A
// kernel's cell (Descriptor) is its roofline class (memory, compute or
// latency; "unplaced" when it could not be placed, as on the cpu platform)
// and its launch regime read from its source: the largest literal given to
// a name with BLOCK in it (<=128, <=1024, >1024, ? for none) and to
// num_warps (<=4, >4, ? for none). Each round rewrites the elites of
// num_top_kernels distinct cells (the best's first, then the fastest other
// cells; missing cells give their slots to the best), each along
// num_bottlenecks directions, and every slot carries the num_inspirations
// fastest elites of other cells as further parents, which the optimize
// prompt shows. Update puts a measured (correct) kernel in its cell when
// the cell is empty or it is faster than the elite there; the archive is
// part of State, so a resumed run picks the same cells.
//
// # Duplicates
//
// The loop rejects a candidate as "duplicate" before any verification when
// it repeats an earlier candidate of the run: first by normalised source
// (History.Hashes), then by compiled code: the Triton IR of the kernels it
// launches, for their launch's constexprs, options and grid, and its host
// code (platform.Fingerprinter; docs/search.md). Strategies never see a
// duplicate as measured.
//
// # Adding a strategy
//
//  1. Write search/<name>.go: the strategy type with Name, Directions,
//     Slots and Update; an init that calls Register with its Spec (the name
//     that `strategy:` and --strategy select, a one-line Summary, NeedsLLM,
//     Searches, Check for its settings, New); and an interface guard.
//  2. Write its preset, configs/strategies/<name>.yaml (`strategy: <name>`
//     and its rounds and strategy_config); it is embedded, `--strategy
//     <name>` loads it, and configs' tests require a preset for every
//     registered strategy.
//  3. Test it in search/<name>_test.go: the slots it picks for a State and a
//     History, and what Update does with an Outcome (search_test.go's beam
//     tests show how to build them).
//  4. Only if it reads a setting the others do not: a field of Settings, its
//     strategy_config key in configs.StrategyConfig (configs/config.go) and
//     the line of Config.SearchSettings that copies it.
//
// Nothing else names strategies: configs validates a config's strategy and
// settings through Check; the loop, dry runs, sweeps and commands ask the
// registry (New, NeedsLLM, WithoutLLM, Searches); help, error messages and
// `kagent env` list Names(). A sketch of step 1 (example_strategy_test.go
// holds it complete, compiled and run):
//
//	const Widest = "widest"
//
//	func init() {
//		Register(Spec{Name: Widest, NeedsLLM: true, Searches: true,
//			Summary: "rewrite the best kernel along num_bottlenecks directions a round",
//			Check:   func(s Settings) []string { ... },
//			New: func(s Settings, _ Tuner) (Strategy, error) {
//				return widest{m: s.NumBottlenecks}, nil
//			}})
//	}
//
//	// widest rewrites the best kernel along m directions each round.
//	type widest struct{ m int }
//
//	func (widest) Name() string      { return Widest }
//	func (w widest) Directions() int { return w.m }
//
//	func (w widest) Slots(_ context.Context, s *State, _ History) ([]Slot, error) {
//		out := make([]Slot, w.m)
//		for i := range out {
//			out[i] = Slot{Index: i + 1, Parents: []string{s.BestID}, Rank: i + 1}
//		}
//		return out, nil
//	}
//
//	func (widest) Update(s *State, out Outcome, _ History) { Plateau(s, out) }
//
//	// Interface guards
//	var _ Strategy = widest{}
package search
