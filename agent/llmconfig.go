package agent

import (
	"strings"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/configs"
)

// LLMConfig maps kagent's configuration onto the LLM layer's:
//
//	llm.provider, model, base_url, api_key_env,
//	reasoning_effort, temperature, timeout     -> the same fields
//	llm.max_concurrency                        -> Concurrency
//	llm.max_retries (retries after the first)  -> Retry.MaxAttempts = retries + 1
//	llm.price_in_per_m, price_out_per_m        -> Prices{"*": {Input, Output}}
//	llm.max_tokens                             -> MaxTokens
//	llm.record, llm.replay (--llm-record/-replay) -> Record, Replay
//	budget.max_calls, max_tokens, max_usd      -> Budget
//	budget.max_wall                            -> Budget.MaxWallTime
//	llm.steps.PURPOSE                          -> Steps[PURPOSE]: this mapping
//	                                              over the step's fields
//
// KernelAgent's openai_model and high_reasoning_effort are folded into
// llm.model and llm.reasoning_effort by configs.Config.Normalize, and are
// passed on too in case Normalize was not called.
func LLMConfig(c configs.Config) llm.Config {
	l := c.LLM
	out := llm.Config{
		Provider:        l.Provider,
		Model:           l.Model,
		BaseURL:         l.BaseURL,
		APIKeyEnv:       l.APIKeyEnv,
		ReasoningEffort: l.ReasoningEffort,
		OpenAIModel:     c.OpenAIModel,
		MaxTokens:       l.MaxTokens,
		Temperature:     l.Temperature,
		Timeout:         l.Timeout,
		Concurrency:     l.MaxConcurrency,
		Record:          l.Record,
		Replay:          l.Replay,
		Budget: llm.Limits{
			MaxCalls:    c.Budget.MaxCalls,
			MaxTokens:   int64(c.Budget.MaxTokens),
			MaxUSD:      c.Budget.MaxUSD,
			MaxWallTime: c.Budget.MaxWall,
		},
	}
	if c.HighReasoningEffort != nil && *c.HighReasoningEffort {
		out.HighReasoningEffort = true
	}
	// A provider set nowhere follows the model name (llm.Config.Resolve:
	// claude-* anthropic, gemini-* google, Bedrock ids bedrock); a name that
	// says nothing is served the OpenAI way, as KernelAgent does.
	if r := out.Resolve(); strings.TrimSpace(out.Provider) == "" && r.Provider == "" && r.Replay == "" {
		out.Provider = llm.ProviderOpenAI
	}
	if l.MaxRetries >= 0 {
		out.Retry.MaxAttempts = l.MaxRetries + 1
	}
	if l.PriceInPerM > 0 || l.PriceOutPerM > 0 {
		out.Prices = map[string]llm.Price{"*": {Input: l.PriceInPerM, Output: l.PriceOutPerM}}
	}
	for name, st := range l.Steps {
		if out.Steps == nil {
			out.Steps = map[llm.Purpose]llm.Config{}
		}
		out.Steps[llm.Purpose(name)] = stepConfig(out, st)
	}
	return out
}

// stepConfig is the config of one llm.steps entry: the default one with the
// step's fields set over it. A step that names a model or base URL but no
// provider gets the provider its model name says (llm.InferProvider), or
// the default one where the name says nothing.
func stepConfig(def llm.Config, st configs.StepConfig) llm.Config {
	sc := def
	sc.Steps = nil
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&sc.Model, st.Model)
	set(&sc.BaseURL, st.BaseURL)
	set(&sc.APIKeyEnv, st.APIKeyEnv)
	set(&sc.ReasoningEffort, st.ReasoningEffort)
	if st.Provider != "" {
		sc.Provider = st.Provider
	} else if st.Model != "" || st.BaseURL != "" {
		set(&sc.Provider, llm.InferProvider(sc.Model, sc.BaseURL))
	}
	if st.Temperature != nil {
		sc.Temperature = st.Temperature
	}
	if st.MaxTokens > 0 {
		sc.MaxTokens = st.MaxTokens
	}
	if st.PriceInPerM > 0 || st.PriceOutPerM > 0 {
		sc.Prices = map[string]llm.Price{"*": {Input: st.PriceInPerM, Output: st.PriceOutPerM}}
	}
	return sc
}
