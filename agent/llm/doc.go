// Package llm is kagent's one door to language models.
//
// Everything the agent asks a model goes through [Client], one small interface:
// Complete(ctx, Request) (Response, error). Concrete clients are stacked, each
// layer doing one job:
//
//	Meter       counts calls, tokens, dollars and wall time, in total, per
//	            purpose and per model; enforces budget caps and the concurrency cap
//	  defaults  fills a request's model, reply budget, ... from its purpose's config
//	    logging   one redacted log line per call
//	      Recorder  (--llm-record DIR) saves every exchange as a JSON file
//	        router  (llm.steps) sends each request to the stack of its purpose
//	          retry   one retry policy (429, 5xx, transport errors), per-call timeout;
//	                  estimates the usage a reply left out (EstimateTokens)
//	            provider  OpenAI-compatible (go-openai) or Anthropic, Gemini, Bedrock (langchaingo)
//
// [Config.Steps] gives purposes models of their own: one retry and provider
// stack per distinct step, all under one Meter, so a run's budget covers
// every model. Without steps there is no router.
//
// With --llm-replay DIR the Replayer takes the place of everything below the
// logging layer: recorded exchanges are served back by request fingerprint, no
// key and no network needed, and a miss is a clear error. With steps, each
// replayed reply is answered as its purpose's model, at that model's prices.
//
// [New] builds that stack from a [Config]. API keys come from the environment
// only (the variable named by api_key_env, or the provider's usual one); a key
// value is never written to records, logs or error messages: see [Redactor].
//
// [ExtractPython] and [ExtractJSON] pull code and JSON out of free-form replies.
package llm
