package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/prompts"
)

// Reply budgets per purpose, unless llm.max_tokens says otherwise.
var defaultMaxTokens = map[llm.Purpose]int{
	llm.PurposeDiagnose: 16384,
	llm.PurposeOptimize: 24576,
	llm.PurposeRefine:   24576,
	llm.PurposeReflect:  4096,
}

// ask sends one prompt to the model. The prompt and the reply are written
// to the run dir as <rel>.prompt.md and <rel>.reply.md, and the call (also a
// failed one) is recorded in the store before ask returns. A reached budget
// is remembered as the run's stop reason and returned as a
// *llm.BudgetExceededError.
//
// After a resume, a reply the run dir holds already is returned without
// asking again: the killed run got it and may have acted on it.
func (pr *proposer) ask(ctx context.Context, round int, candID string, purpose llm.Purpose, p prompts.Prompt, rel string) (string, error) {
	if pr.resumed {
		if b, err := os.ReadFile(pr.art.path(rel + ".reply.md")); err == nil {
			pr.log.Info("reusing a saved reply", "purpose", purpose, "file", rel+".reply.md")
			return string(b), nil
		}
	}
	if err := pr.art.writePrompt(rel+".prompt.md", p); err != nil {
		return "", &fatalError{err}
	}
	if err := pr.budgetLeft(); err != nil {
		return "", err
	}
	req := llm.Request{
		Messages:  []llm.Message{llm.System(p.System), llm.User(p.User)},
		Purpose:   purpose,
		MaxTokens: pr.cfg.LLM.MaxTokensFor(string(purpose)),
	}
	if req.MaxTokens == 0 {
		req.MaxTokens = defaultMaxTokens[purpose]
	}
	resp, err := pr.in.LLM.Complete(ctx, req)
	var be *llm.BudgetExceededError
	refused := errors.As(err, &be) && resp.Usage.Total() == 0 && resp.Duration == 0
	if !refused {
		call := store.LLMCall{
			RunID: pr.runID, Round: round, CandidateID: candID, Purpose: string(purpose), Model: resp.Model,
			PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens,
			UsageEstimated: resp.Usage.Estimated, CostUSD: resp.CostUSD, Duration: resp.Duration, Fingerprint: resp.Fingerprint,
		}
		if call.Model == "" {
			call.Model = pr.cfg.LLM.ModelFor(string(purpose))
		}
		if err != nil {
			call.Error = oneLine(err.Error())
		}
		if _, rerr := pr.st.RecordLLMCall(context.WithoutCancel(ctx), call); rerr != nil {
			return "", &fatalError{rerr}
		}
	}
	if be != nil {
		pr.noteBudget(be)
		return "", fmt.Errorf("llm %s: %w", purpose, be)
	}
	if err != nil {
		return "", fmt.Errorf("llm %s: %w", purpose, err)
	}
	if werr := pr.art.writeAtomic(rel+".reply.md", []byte(resp.Text)); werr != nil {
		return "", &fatalError{werr}
	}
	return resp.Text, nil
}

// noteBudget remembers the first reached budget cap as the stop reason.
func (pr *proposer) noteBudget(be *llm.BudgetExceededError) {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.budgetStop == "" {
		pr.budgetStop = "budget: " + be.Error()
	}
}

// budgetStopped returns the budget stop reason ("" while within budget).
func (pr *proposer) budgetStopped() string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.budgetStop
}

// budgetLeft checks the budget before a call: the client's own caps (a
// *llm.Meter) and, after a resume, the spend recorded before it.
func (pr *proposer) budgetLeft() error {
	if s := pr.budgetStopped(); s != "" {
		return &llm.BudgetExceededError{Cap: "stopped", Limit: "-", Used: strings.TrimPrefix(s, "budget: ")}
	}
	if c, ok := pr.in.LLM.(interface{ Check() error }); ok {
		if err := c.Check(); err != nil {
			var be *llm.BudgetExceededError
			if errors.As(err, &be) {
				pr.noteBudget(be)
			}
			return err
		}
	}
	b, p := pr.in.Budget, pr.prior
	if p.Calls == 0 {
		return nil
	}
	var cur llm.Stats
	if r, ok := pr.in.LLM.(llm.StatsReporter); ok {
		cur = r.Stats()
	}
	var be *llm.BudgetExceededError
	switch {
	case b.MaxCalls > 0 && p.Calls+cur.Calls >= b.MaxCalls:
		be = &llm.BudgetExceededError{Cap: "max_calls", Limit: fmt.Sprint(b.MaxCalls), Used: fmt.Sprintf("%d calls (%d before the resume)", p.Calls+cur.Calls, p.Calls)}
	case b.MaxTokens > 0 && p.PromptTokens+p.CompletionTokens+cur.Tokens() >= b.MaxTokens:
		be = &llm.BudgetExceededError{Cap: "max_tokens", Limit: fmt.Sprint(b.MaxTokens), Used: fmt.Sprintf("%d tokens", p.PromptTokens+p.CompletionTokens+cur.Tokens())}
	case b.MaxUSD > 0 && p.CostUSD+cur.CostUSD >= b.MaxUSD:
		be = &llm.BudgetExceededError{Cap: "max_usd", Limit: fmt.Sprintf("$%.2f", b.MaxUSD), Used: fmt.Sprintf("$%.4f", p.CostUSD+cur.CostUSD)}
	}
	if be != nil {
		pr.noteBudget(be)
		return be
	}
	return nil
}

// usage is the run's LLM spend: what the store recorded.
func (pr *proposer) usage(ctx context.Context) store.Usage {
	u, err := pr.st.LLMUsage(context.WithoutCancel(ctx), pr.runID)
	if err != nil {
		pr.log.Warn("read llm usage", "err", err)
	}
	return u
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
