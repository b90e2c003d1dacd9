package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ForPurpose is the config a call of purpose p is served with: its
// llm.steps entry, or c itself.
func (c Config) ForPurpose(p Purpose) Config {
	if sc, ok := c.Steps[p]; ok {
		return sc
	}
	return c
}

// Models lists the distinct models a resolved config serves, the default
// one first.
func (c Config) Models() []string {
	out := []string{c.Model}
	for _, p := range Purposes() {
		if sc, ok := c.Steps[p]; ok && !slices.Contains(out, sc.Model) {
			out = append(out, sc.Model)
		}
	}
	return out
}

// validateSteps checks every llm.steps entry of a resolved config.
func (c Config) validateSteps() []error {
	var errs []error
	for p := range c.Steps {
		if !slices.Contains(Purposes(), p) {
			errs = append(errs, fmt.Errorf("llm.steps.%s: not a purpose (want one of %s)", p, purposeList()))
		}
	}
	for _, p := range Purposes() {
		sc, ok := c.Steps[p]
		if !ok {
			continue
		}
		sc.Budget, sc.Replay, sc.Record = c.Budget, c.Replay, ""
		if err := sc.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("llm.steps.%s: %w", p, err))
		}
	}
	return errs
}

func purposeList() string {
	var names []string
	for _, p := range Purposes() {
		names = append(names, string(p))
	}
	return strings.Join(names, ", ")
}

// stackKey identifies the provider stack a step config needs: steps that
// differ only in request defaults (reasoning effort, temperature, reply
// budget) share one.
func stackKey(c Config) string {
	b, _ := json.Marshal(struct {
		Provider, Model, BaseURL, APIKeyEnv, Region string
		Prices                                      map[string]Price
	}{c.Provider, c.Model, c.BaseURL, c.APIKeyEnv, c.Region, c.Prices})
	return string(b)
}

// newRouted builds one retry and provider stack per distinct step config of
// a resolved cfg (cfg itself included) and routes each request to the stack
// of its purpose. A missing key names the step that needs it.
func newRouted(cfg Config, build func(Config) (Client, error)) (Client, error) {
	byKey := map[string]Client{}
	get := func(sc Config, step Purpose) (Client, error) {
		k := stackKey(sc)
		if c, ok := byKey[k]; ok {
			return c, nil
		}
		c, err := build(sc)
		if mk := (*MissingKeyError)(nil); errors.As(err, &mk) {
			mk.Step = step
		}
		if err != nil {
			return nil, err
		}
		byKey[k] = c
		return c, nil
	}
	r := &router{byPurpose: map[Purpose]Client{}}
	var err error
	if r.fallback, err = get(cfg, ""); err != nil {
		return nil, err
	}
	for _, p := range Purposes() {
		sc, ok := cfg.Steps[p]
		if !ok {
			continue
		}
		if r.byPurpose[p], err = get(sc, p); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// router sends each request to the client of its purpose.
type router struct {
	byPurpose map[Purpose]Client
	fallback  Client
}

func (r *router) Complete(ctx context.Context, req Request) (Response, error) {
	if c, ok := r.byPurpose[req.Purpose]; ok {
		return c.Complete(ctx, req)
	}
	return r.fallback.Complete(ctx, req)
}

// Interface guards
var _ Client = (*router)(nil)
