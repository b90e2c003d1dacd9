package configs

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/internal/suggest"
)

// StepConfig overrides the model of one purpose (llm.steps.PURPOSE). Unset
// fields inherit from llm:. In YAML it is a mapping of these keys, or a
// string: the model alone (`refine: gpt-5-mini`).
type StepConfig struct {
	Provider        string   `yaml:"provider,omitempty"`
	Model           string   `yaml:"model,omitempty"`
	BaseURL         string   `yaml:"base_url,omitempty"`
	APIKeyEnv       string   `yaml:"api_key_env,omitempty"`
	ReasoningEffort string   `yaml:"reasoning_effort,omitempty"`
	PriceInPerM     float64  `yaml:"price_in_per_m,omitempty"`
	PriceOutPerM    float64  `yaml:"price_out_per_m,omitempty"`
	Temperature     *float64 `yaml:"temperature,omitempty"`
	MaxTokens       int      `yaml:"max_tokens,omitempty"`
}

// UnmarshalYAML accepts a model name or a mapping of StepConfig's keys;
// an unknown key names the closest known one.
func (s *StepConfig) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*s = StepConfig{Model: strings.TrimSpace(n.Value)}
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: a step is a model name or a mapping of %s", n.Line, strings.Join(stepKeys(), ", "))
	}
	known := stepKeys()
	for i := 0; i < len(n.Content); i += 2 {
		k := n.Content[i]
		if slices.Contains(known, k.Value) {
			continue
		}
		if c := suggest.Closest(k.Value, known); c != "" {
			return fmt.Errorf("line %d: unknown key %q in llm.steps; did you mean %q?", k.Line, k.Value, c)
		}
		return fmt.Errorf("line %d: unknown key %q in llm.steps (known: %s)", k.Line, k.Value, strings.Join(known, ", "))
	}
	type plain StepConfig
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*s = StepConfig(p)
	return nil
}

// stepKeys lists StepConfig's YAML keys, sorted.
func stepKeys() []string { return knownKeys(reflect.TypeOf(StepConfig{})) }

// Purposes are the llm.steps keys: the LLM layer's purposes.
func Purposes() []string {
	var out []string
	for _, p := range llm.Purposes() {
		out = append(out, string(p))
	}
	return out
}

// ModelFor is the model that serves calls of a purpose: its step's, else llm.model.
func (l LLMConfig) ModelFor(purpose string) string {
	if s, ok := l.Steps[purpose]; ok && s.Model != "" {
		return s.Model
	}
	return l.Model
}

// validateSteps reports the problems of llm.steps, one line each.
func (l LLMConfig) validateSteps() []string {
	var errs []string
	names := make([]string, 0, len(l.Steps))
	for k := range l.Steps {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		s := l.Steps[k]
		if !slices.Contains(Purposes(), k) {
			msg := fmt.Sprintf("llm.steps.%s: not a purpose", k)
			if c := suggest.Closest(k, Purposes()); c != "" {
				msg += fmt.Sprintf("; did you mean %q?", c)
			} else {
				msg += " (want one of " + strings.Join(Purposes(), ", ") + ")"
			}
			errs = append(errs, msg)
			continue
		}
		if p := strings.ToLower(strings.TrimSpace(s.Provider)); p != "" && !slices.Contains(llm.ProviderNames(), p) {
			errs = append(errs, fmt.Sprintf("llm.steps.%s.provider %q is not one of %s", k, s.Provider, strings.Join(llm.ProviderNames(), ", ")))
		}
		if e := s.ReasoningEffort; e != "" && !slices.Contains(llm.ReasoningEfforts(), e) {
			errs = append(errs, fmt.Sprintf("llm.steps.%s.reasoning_effort %q is not one of %s", k, e, strings.Join(llm.ReasoningEfforts(), ", ")))
		}
		if s.MaxTokens < 0 || s.PriceInPerM < 0 || s.PriceOutPerM < 0 {
			errs = append(errs, fmt.Sprintf("llm.steps.%s: max_tokens and the prices must not be negative", k))
		}
		if t := s.Temperature; t != nil && (*t < 0 || *t > 2) {
			errs = append(errs, fmt.Sprintf("llm.steps.%s.temperature %g: want 0..2", k, *t))
		}
	}
	if len(l.Steps) > 0 && l.Model == "" && l.Replay == "" {
		errs = append(errs, "llm.steps is set but llm.model is not: set the default model that serves the other purposes")
	}
	return errs
}

// MaxTokensFor is the reply budget of a purpose: its step's max_tokens, else
// llm.max_tokens (0: the caller's default).
func (l LLMConfig) MaxTokensFor(purpose string) int {
	if s, ok := l.Steps[purpose]; ok && s.MaxTokens > 0 {
		return s.MaxTokens
	}
	return l.MaxTokens
}
