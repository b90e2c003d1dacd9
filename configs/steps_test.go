package configs

import (
	"errors"
	"strings"
	"testing"
)

func TestLLMSteps(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       map[string]StepConfig // nil: an error containing err
		err        string
	}{
		{name: "shorthand and mapping", yaml: `
llm:
  model: gpt-5
  steps:
    refine: gpt-5-mini
    diagnose:
      model: claude-sonnet-4-5
      price_in_per_m: 3
      max_tokens: 8000
`, want: map[string]StepConfig{"refine": {Model: "gpt-5-mini"},
			"diagnose": {Model: "claude-sonnet-4-5", PriceInPerM: 3, MaxTokens: 8000}}},
		{name: "unknown purpose", yaml: "llm:\n  model: gpt-5\n  steps:\n    refin: gpt-5-mini\n", err: `llm.steps.refin: not a purpose; did you mean "refine"?`},
		{name: "unknown step key", yaml: "llm:\n  model: gpt-5\n  steps:\n    refine:\n      modle: x\n", err: `unknown key "modle" in llm.steps; did you mean "model"?`},
		{name: "bad provider", yaml: "llm:\n  model: gpt-5\n  steps:\n    refine: {provider: nope}\n", err: `llm.steps.refine.provider "nope"`},
		{name: "no default model", yaml: "llm:\n  steps:\n    refine: gpt-5-mini\n", err: "llm.steps is set but llm.model is not"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			err := Apply(&cfg, Source{Path: "c.yaml", Data: []byte(tc.yaml)})
			if err == nil {
				cfg.Normalize()
				err = cfg.Validate()
			}
			if tc.err != "" {
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("err = %v, want one line with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.LLM.Steps) != len(tc.want) {
				t.Fatalf("steps = %+v, want %+v", cfg.LLM.Steps, tc.want)
			}
			for k, w := range tc.want {
				if g := cfg.LLM.Steps[k]; g.Model != w.Model || g.PriceInPerM != w.PriceInPerM || g.MaxTokens != w.MaxTokens {
					t.Errorf("steps[%s] = %+v, want %+v", k, g, w)
				}
			}
			if cfg.LLM.ModelFor("refine") != "gpt-5-mini" || cfg.LLM.ModelFor("optimize") != "gpt-5" || cfg.LLM.MaxTokensFor("diagnose") != 8000 {
				t.Errorf("ModelFor/MaxTokensFor do not follow the steps")
			}
		})
	}
}
