// Package generate writes a first kernel for a PyTorch problem (KernelBench
// form: class Model, get_inputs, get_init_inputs) with an LLM, the way
// KernelAgent's TritonKernelAgent does, and verifies it on a platform:
//
//	N seeds in parallel   each asks for a kernel (the generate prompt, at
//	                      temperature 0.8 unless llm.temperature is set);
//	                      LLM concurrency is bounded by the client
//	verify                every kernel goes through the platform's full
//	                      verification (static check first)
//	refine                a rejected kernel is sent back with the named
//	                      failure and its one-line reason (the refine
//	                      prompt), up to refine_attempts times per seed
//	first success wins    the first kernel that passes ends the generation:
//	                      the other seeds' LLM calls are cancelled and no new
//	                      verification starts (one already running finishes,
//	                      so a warm worker is not killed for it)
//
// [Run] returns the winner, or an [*AllFailedError] listing each seed's last
// failure. [Prepare] and [WriteKernelDir] turn a problem file into a kernel
// dir that `kagent optimize` accepts: problem.py (a copy), input.py (the
// winner), kagent.yaml (the defaults, written out) and README.md (one line
// saying where the kernel came from).
//
// Every prompt, reply, kernel and verdict is written under the artifacts dir
// (default <kernel dir>/.kagent/generate/<run id>/):
//
//	seed1/attempt0/generate.prompt.md, generate.reply.md, kernel.py, verdict.json
//	seed1/attempt1/refine.prompt.md, refine.reply.md, kernel.py, verdict.json
//	result.json                                       the Result
//
// With a store, the generation is also a run of the history (strategy
// "generate"): its round 0 holds one candidate per attempt (s1, s1f1, s2, ...,
// RefineOf linking a repair to the kernel it fixes) with its verdict, every
// LLM call is recorded, a cancelled attempt ends as failed, and the run
// finishes with the outcome as its stop reason. A killed generation is not
// resumed: it starts again.
package generate
