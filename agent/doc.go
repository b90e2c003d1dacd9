// Package agent is kagent's optimization loop.
//
// [Run] takes a loaded kernel dir, an open platform session, a run store and
// (optionally) an LLM client, and searches for a faster verified kernel:
//
//	round 0   verify the input kernel; time PyTorch eager, torch.compile and the
//	          input by the same code; profile the input and place it on the
//	          roofline. The measured input time is the baseline.
//	round r   the strategy selects (parent, direction) slots. Each parent is
//	          diagnosed once per round (M ranked, distinct bottlenecks as JSON,
//	          shared by its M directions); each slot is rewritten by the LLM,
//	          verified (static check first; refined up to K times with the named
//	          failure and its one-line reason), timed and profiled. Candidates
//	          faster than the best are then timed interleaved against it and
//	          promoted only when faster by more than min_improvement_pct and
//	          noise_factor x CV. Every attempt is reflected on (LLM).
//	stop      at the roofline threshold, on a plateau (max_no_improvement rounds
//	          without a promotion), after max_rounds, or when the LLM budget is
//	          spent (a clean stop with the reason).
//	finish    the acceptance gate re-verifies the best in a fresh process with
//	          new seeds; best_kernel.py, the report and
//	          optimized_kernel_<strategy>.py are written.
//
// The strategies live in package search (greedy, beam_search, tune, noop, and
// the registry that says which need an LLM); the loop asks the configured one
// for each round's slots and tells it the outcome. Without an LLM the tune
// strategy proposes; after an LLM search an optional tune polish follows.
//
// Inside, a run has three parts: the loop (run.go, round.go, promote.go) is
// the driver, owning rounds, the strategy, promotions and stop rules; the
// pipeline (pipeline.go) takes one candidate through verification, timing
// and profiling, and the recorder (record.go) writes each step to its
// artifact, the store and the event stream; the proposer (proposer.go,
// llmsteps.go, llmcall.go) makes each slot's candidates and repairs (knob
// variants, or LLM diagnosis, rewrite, refinement and reflection) from the
// view of the round the driver gives it, and keeps the LLM budget.
//
// Every result is written to the store (agent/store) before the next step, so
// [Resume] continues a killed run: finished rounds are skipped whole, and in
// the open round no measured candidate is timed again and no recorded LLM
// step (diagnosis, rewrite, reflection) is asked again.
package agent
