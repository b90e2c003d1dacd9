package llm

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Provider names accepted in llm.provider.
const (
	// ProviderOpenAI is OpenAI itself, or any OpenAI-compatible server when
	// base_url is set (vLLM, SGLang, Ollama's /v1, an in-house relay).
	ProviderOpenAI = "openai"
	// ProviderVLLM, ProviderSGLang, ProviderOllama and ProviderOpenRouter are
	// OpenAI-compatible servers with their usual base URL as default.
	ProviderVLLM       = "vllm"
	ProviderSGLang     = "sglang"
	ProviderOllama     = "ollama"
	ProviderOpenRouter = "openrouter"
	// ProviderAnthropic is Anthropic's messages API (through langchaingo).
	ProviderAnthropic = "anthropic"
	// ProviderGoogle is Google's Gemini API (through langchaingo). "gemini" is an alias.
	ProviderGoogle = "google"
	// ProviderBedrock is AWS Bedrock (through langchaingo).
	ProviderBedrock = "bedrock"
)

// providerSpellings are the accepted llm.provider spellings and the
// provider each names, in the order help and errors list them.
var providerSpellings = [][2]string{
	{"openai", ProviderOpenAI}, {"openai-compatible", ProviderOpenAI}, {"openai_compatible", ProviderOpenAI},
	{"vllm", ProviderVLLM}, {"sglang", ProviderSGLang}, {"ollama", ProviderOllama}, {"openrouter", ProviderOpenRouter},
	{"anthropic", ProviderAnthropic}, {"claude", ProviderAnthropic},
	{"google", ProviderGoogle}, {"gemini", ProviderGoogle}, {"googleai", ProviderGoogle},
	{"bedrock", ProviderBedrock}, {"aws", ProviderBedrock},
}

// providerAliases maps accepted spellings to provider names.
var providerAliases = func() map[string]string {
	m := map[string]string{}
	for _, p := range providerSpellings {
		m[p[0]] = p[1]
	}
	return m
}()

// ProviderNames lists every accepted llm.provider spelling (the single
// source the configuration validates against).
func ProviderNames() []string {
	out := make([]string, len(providerSpellings))
	for i, p := range providerSpellings {
		out[i] = p[0]
	}
	return out
}

// ReasoningEfforts lists the accepted llm.reasoning_effort values (empty
// means the model's default).
func ReasoningEfforts() []string { return slices.Clone(reasoningEfforts[1:]) }

// defaultBaseURLs of the OpenAI-compatible servers.
var defaultBaseURLs = map[string]string{
	ProviderVLLM:       "http://localhost:8000/v1",
	ProviderSGLang:     "http://localhost:30000/v1",
	ProviderOllama:     "http://localhost:11434/v1",
	ProviderOpenRouter: "https://openrouter.ai/api/v1",
}

// defaultKeyEnv is the environment variable a provider's key is read from
// when api_key_env is not set ("" = no key needed).
var defaultKeyEnv = map[string]string{
	ProviderOpenAI:     "OPENAI_API_KEY",
	ProviderOpenRouter: "OPENROUTER_API_KEY",
	ProviderAnthropic:  "ANTHROPIC_API_KEY",
	ProviderGoogle:     "GOOGLE_API_KEY",
}

// reasoningEfforts accepted in reasoning_effort.
var reasoningEfforts = []string{"", "none", "minimal", "low", "medium", "high", "xhigh", "max"}

// Config configures the LLM stack that [New] builds. It is the `llm:` section
// of kagent's YAML; the zero value plus a model is usable.
type Config struct {
	// Provider is one of openai, vllm, sglang, ollama, openrouter, anthropic,
	// google (gemini), bedrock. Empty: inferred from the model name.
	Provider string `yaml:"provider" json:"provider,omitempty"`
	Model    string `yaml:"model" json:"model,omitempty"`
	// BaseURL points an OpenAI-compatible provider at another server, or
	// Anthropic/Gemini/Bedrock at a proxy.
	BaseURL string `yaml:"base_url" json:"base_url,omitempty"`
	// APIKeyEnv names the environment variable holding the key. Keys are read
	// from the environment only, never from files or flags.
	APIKeyEnv string `yaml:"api_key_env" json:"api_key_env,omitempty"`
	// ReasoningEffort for models that take one: low, medium or high.
	ReasoningEffort string `yaml:"reasoning_effort" json:"reasoning_effort,omitempty"`
	// OpenAIModel is KernelAgent's name for Model (used when Model is empty).
	OpenAIModel string `yaml:"openai_model" json:"openai_model,omitempty"`
	// HighReasoningEffort is KernelAgent's switch: reasoning_effort high.
	HighReasoningEffort bool `yaml:"high_reasoning_effort" json:"high_reasoning_effort,omitempty"`
	// MaxTokens is the reply budget of a request that sets none (default 16384).
	MaxTokens int `yaml:"max_tokens" json:"max_tokens,omitempty"`
	// Temperature of requests that set none; nil leaves the provider's default.
	Temperature *float64 `yaml:"temperature" json:"temperature,omitempty"`
	// Region is the AWS region for Bedrock ("" = $AWS_REGION or $AWS_DEFAULT_REGION).
	Region string `yaml:"region" json:"region,omitempty"`
	// Timeout bounds one attempt of one call (default 10m).
	Timeout time.Duration `yaml:"timeout" json:"timeout,omitempty"`
	Retry   RetryPolicy   `yaml:"retry" json:"retry"`
	// Prices per model name (exact, or a pattern where * matches anything, like "gpt-5*"),
	// in US dollars per million tokens.
	Prices map[string]Price `yaml:"prices" json:"prices,omitempty"`
	// Budget caps a run's LLM use; zero fields are unlimited.
	Budget Limits `yaml:"budget" json:"budget"`
	// Concurrency caps calls in flight at once (0 = no cap).
	Concurrency int `yaml:"concurrency" json:"concurrency,omitempty"`
	// Record saves every exchange as a JSON file in this directory (--llm-record).
	Record string `yaml:"record" json:"record,omitempty"`
	// Replay serves exchanges recorded in this directory instead of calling a
	// provider (--llm-replay). No key is needed.
	Replay string `yaml:"replay" json:"replay,omitempty"`
	// ReplayMatch is how replayed exchanges are matched to requests: exact
	// (the default), strict, similar or purpose; see Replayer.
	ReplayMatch string `yaml:"replay_match" json:"replay_match,omitempty"`
	// Steps gives purposes a model of their own (llm.steps). Each entry is a
	// whole config, filled from this one by the caller, of which a step uses
	// the provider, model, base URL, key, region, reasoning effort,
	// temperature, reply budget and prices. Budget, concurrency, retries,
	// timeout, record and replay are this config's, shared by every step.
	// Purposes without an entry use this config.
	Steps map[Purpose]Config `yaml:"steps" json:"steps,omitempty"`
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// Limits are budget caps. Zero means unlimited.
type Limits struct {
	MaxCalls    int           `yaml:"max_calls" json:"max_calls,omitempty"`
	MaxTokens   int64         `yaml:"max_tokens" json:"max_tokens,omitempty"`
	MaxUSD      float64       `yaml:"max_usd" json:"max_usd,omitempty"`
	MaxWallTime time.Duration `yaml:"max_wall_time" json:"max_wall_time,omitempty"`
}

// Defaults.
const (
	DefaultMaxTokens = 16384
	DefaultTimeout   = 10 * time.Minute
)

// Resolve returns the config with KernelAgent's keys mapped, the provider
// inferred from the model when unset, aliases normalised and defaults filled.
func (c Config) Resolve() Config {
	if c.Model == "" {
		c.Model = c.OpenAIModel
	}
	if c.ReasoningEffort == "" && c.HighReasoningEffort {
		c.ReasoningEffort = "high"
	}
	c.ReasoningEffort = strings.ToLower(strings.TrimSpace(c.ReasoningEffort))
	p := strings.ToLower(strings.TrimSpace(c.Provider))
	if canon, ok := providerAliases[p]; ok {
		p = canon
	}
	if p == "" && c.Replay == "" {
		p = InferProvider(c.Model, c.BaseURL)
	}
	c.Provider = p
	if c.BaseURL == "" {
		c.BaseURL = defaultBaseURLs[c.Provider]
	}
	if c.MaxTokens == 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	c.Retry = c.Retry.withDefaults()
	if len(c.Steps) > 0 {
		steps := make(map[Purpose]Config, len(c.Steps))
		for p, sc := range c.Steps {
			sc.Steps = nil
			steps[p] = sc.Resolve()
		}
		c.Steps = steps
	}
	return c
}

// InferProvider guesses the provider from a model name: Bedrock model ids
// (anthropic.*, us.anthropic.*, amazon.*, meta.*) are bedrock; any other model
// with a base URL is openai-compatible; else claude-* is anthropic, gemini-*
// google, gpt-* and the o-series openai, and anything else "" (unknown).
func InferProvider(model, baseURL string) string {
	m := strings.ToLower(model)
	switch {
	case m == "":
		return ""
	case strings.Contains(m, "anthropic.") || strings.HasPrefix(m, "amazon.") || strings.HasPrefix(m, "meta.") ||
		strings.HasPrefix(m, "arn:aws:bedrock"):
		return ProviderBedrock
	case baseURL != "":
		return ProviderOpenAI
	case strings.HasPrefix(m, "claude"):
		return ProviderAnthropic
	case strings.HasPrefix(m, "gemini"):
		return ProviderGoogle
	case strings.HasPrefix(m, "gpt-") || isReasoningModel(m):
		return ProviderOpenAI
	}
	return ""
}

// Validate reports the first problem of a resolved config.
func (c Config) Validate() error {
	var errs []error
	if c.Record != "" && c.Replay != "" {
		errs = append(errs, errors.New("llm.record and llm.replay are exclusive"))
	}
	if c.Replay == "" {
		if c.Model == "" {
			errs = append(errs, errors.New("llm.model is not set (or openai_model)"))
		}
		switch {
		case c.Provider == "" && c.Model != "":
			errs = append(errs, fmt.Errorf("cannot infer the llm provider of model %q: set llm.provider (one of %s)", c.Model, strings.Join(Providers(), ", ")))
		case c.Provider != "" && !slices.Contains(Providers(), c.Provider):
			errs = append(errs, fmt.Errorf("%w %q: want one of %s", ErrUnknownProvider, c.Provider, strings.Join(Providers(), ", ")))
		}
	}
	if !slices.Contains(reasoningEfforts, c.ReasoningEffort) {
		errs = append(errs, fmt.Errorf("llm.reasoning_effort %q: want one of low, medium, high", c.ReasoningEffort))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, fmt.Errorf("llm.max_tokens %d is negative", c.MaxTokens))
	}
	if c.Temperature != nil && (*c.Temperature < 0 || *c.Temperature > 2) {
		errs = append(errs, fmt.Errorf("llm.temperature %g: want 0..2", *c.Temperature))
	}
	if c.Timeout < 0 {
		errs = append(errs, fmt.Errorf("llm.timeout %s is negative", c.Timeout))
	}
	if err := c.Retry.validate(); err != nil {
		errs = append(errs, err)
	}
	for pat, p := range c.Prices {
		if p.Input < 0 || p.Output < 0 {
			errs = append(errs, fmt.Errorf("llm.prices[%s]: negative price", pat))
		}
	}
	b := c.Budget
	if b.MaxCalls < 0 || b.MaxTokens < 0 || b.MaxUSD < 0 || b.MaxWallTime < 0 {
		errs = append(errs, errors.New("llm.budget: caps must not be negative"))
	}
	if b.MaxUSD > 0 && c.Replay == "" {
		if _, ok := c.price(c.Model); !ok {
			errs = append(errs, fmt.Errorf("llm.budget.max_usd is set but llm.prices has no price for model %q", c.Model))
		}
	}
	if c.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("llm.concurrency %d is negative", c.Concurrency))
	}
	errs = append(errs, c.validateSteps()...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("validate llm config: %w", err)
	}
	return nil
}

// Providers lists the provider names, sorted.
func Providers() []string {
	return []string{ProviderAnthropic, ProviderBedrock, ProviderGoogle, ProviderOllama,
		ProviderOpenAI, ProviderOpenRouter, ProviderSGLang, ProviderVLLM}
}

// price finds the price of a model: an exact key first, then the longest
// matching pattern.
func (c Config) price(model string) (Price, bool) {
	if p, ok := c.Prices[model]; ok {
		return p, true
	}
	best, bestLen, found := Price{}, -1, false
	for pat, p := range c.Prices {
		if glob(pat, model) && len(pat) > bestLen {
			best, bestLen, found = p, len(pat), true
		}
	}
	return best, found
}

// Cost is what usage of a model costs under the configured prices (0 when no
// price is known).
func (c Config) Cost(model string, u Usage) float64 {
	p, ok := c.price(model)
	if !ok {
		return 0
	}
	return (float64(u.PromptTokens)*p.Input + float64(u.CompletionTokens)*p.Output) / 1e6
}

// isReasoningModel reports whether an OpenAI model takes max_completion_tokens
// and reasoning_effort and rejects temperature: the o-series, gpt-5 and later,
// gpt-oss. A vendor prefix ("openai/gpt-5") is ignored.
func isReasoningModel(model string) bool {
	m := strings.ToLower(model)
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	if len(m) >= 2 && m[0] == 'o' && m[1] >= '1' && m[1] <= '9' {
		return true
	}
	for _, p := range []string{"gpt-5", "gpt-6", "gpt-7", "gpt-oss"} {
		if strings.HasPrefix(m, p) {
			return true
		}
	}
	return false
}

// glob matches s against a pattern in which * stands for any run of bytes.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
