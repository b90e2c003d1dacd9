package generate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
)

// Failure names generation gives itself (the harness names the others).
const failExtract = "extract" // the reply held no Python code

// attemptID names attempt n of seed k: s1, s1f1, s1f2, ...
func attemptID(k, n int) string {
	if n == 0 {
		return fmt.Sprintf("s%d", k)
	}
	return fmt.Sprintf("s%df%d", k, n)
}

// attemptDir is where attempt n of seed k writes its files, relative to the
// artifacts dir.
func attemptDir(k, n int) string {
	return filepath.Join(fmt.Sprintf("seed%d", k), fmt.Sprintf("attempt%d", n))
}

// seed runs seed k: ask for a kernel, verify it, refine it with the failure
// until it passes or the attempts are spent. LLM calls use wctx (cancelled
// when another seed wins); a verification that started finishes under ctx.
func (g *gen) seed(ctx, wctx context.Context, k int) SeedOutcome {
	out := SeedOutcome{Seed: k}
	maxRefine := max(0, g.in.Config.RefineAttempts)
	var prev string // the last kernel (or reply) and its verdict
	var prevV platform.Verdict
	var failures []string
	for n := 0; n <= maxRefine; n++ {
		if wctx.Err() != nil {
			out.Stopped = stopReason(wctx)
			return out
		}
		id, rel := attemptID(k, n), attemptDir(k, n)
		var p prompts.Prompt
		var err error
		purpose := llm.PurposeGenerate
		if n == 0 {
			p, err = g.in.Prompts.Generate(prompts.GenerateData{Target: g.target, Problem: g.in.Task.ProblemSource, DType: g.in.Task.Options.DType})
		} else {
			purpose = llm.PurposeRefine
			p, err = g.in.Prompts.Refine(prompts.RefineData{Target: g.target, Problem: g.in.Task.ProblemSource, Kernel: prev,
				Failure: prevV.Failure, Reason: prevV.Reason, Attempt: n, MaxAttempts: maxRefine, Previous: failures[:len(failures)-1]})
		}
		if err != nil {
			g.fail(fmt.Errorf("generate: render the %s prompt: %w", purpose, err))
			out.Stopped = "prompt: " + oneLine(err.Error())
			return out
		}
		reply, err := g.ask(wctx, id, purpose, p, filepath.Join(rel, string(purpose)))
		if err != nil {
			switch {
			case wctx.Err() != nil:
				out.Stopped = stopReason(wctx)
			case errors.Is(err, llm.ErrBudgetExceeded):
				out.Stopped = "budget: " + oneLine(err.Error())
			default:
				out.Stopped = "llm: " + oneLine(err.Error())
			}
			return out
		}
		src, xerr := llm.ExtractPython(reply)
		if xerr != nil {
			src = reply
		}
		a := Attempt{ID: id, Seed: k, Attempt: n, Path: filepath.Join(g.dir, rel, "kernel.py")}
		if err := g.add(ctx, a, src, failures); err != nil {
			g.fail(err)
			out.Stopped = oneLine(err.Error())
			return out
		}
		var v platform.Verdict
		if xerr != nil {
			v = platform.Verdict{Failure: failExtract, Reason: oneLine(xerr.Error()),
				Checks: []platform.Check{{Name: failExtract, Reason: oneLine(xerr.Error())}}}
		} else {
			if wctx.Err() != nil {
				out.Stopped = stopReason(wctx)
				return out
			}
			v, err = g.in.Session.Verify(ctx, platform.Candidate{ID: id, Path: a.Path, Source: src})
			if err != nil {
				if errors.Is(err, platform.ErrProblem) || ctx.Err() != nil {
					g.fail(fmt.Errorf("generate: verify %s: %w", id, err))
				}
				out.Stopped = "verify: " + oneLine(err.Error())
				return out
			}
		}
		a.Passed, a.Failure, a.Reason = v.Passed, v.Failure, v.Reason
		out.Attempts = append(out.Attempts, a)
		if err := g.record(ctx, a, v); err != nil {
			g.fail(err)
			out.Stopped = oneLine(err.Error())
			return out
		}
		if v.Passed {
			if g.win(a, src, v) {
				g.progress("seed %d: %s passed verification", k, id)
				out.Passed = true
				return out
			}
			g.progress("seed %d: %s passed, after another seed", k, id)
			out.Stopped = stopReason(wctx)
			return out
		}
		g.progress("seed %d: %s rejected: %s: %s", k, id, v.Failure, v.Reason)
		prev, prevV = src, v
		failures = append(failures, v.Failure+": "+v.Reason)
	}
	out.Stopped = fmt.Sprintf("refine attempts spent (%d)", maxRefine)
	return out
}

// stopReason says why a cancelled seed stopped.
func stopReason(wctx context.Context) string {
	if errors.Is(context.Cause(wctx), errWon) {
		return errWon.Error()
	}
	return "cancelled: " + oneLine(context.Cause(wctx).Error())
}

// ask sends one prompt. The prompt and the reply are written beside the
// attempt's kernel, and the call (also a failed one) is recorded in the
// store and the usage.
func (g *gen) ask(ctx context.Context, id string, purpose llm.Purpose, p prompts.Prompt, rel string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "<!-- prompt %s -->\n\n## system\n\n%s\n\n## user\n\n%s\n", p.Name, strings.TrimRight(p.System, "\n"), strings.TrimRight(p.User, "\n"))
	if err := g.write(rel+".prompt.md", b.String()); err != nil {
		return "", err
	}
	req := llm.Request{Messages: []llm.Message{llm.System(p.System), llm.User(p.User)}, Purpose: purpose,
		MaxTokens: g.in.Config.LLM.MaxTokensFor(string(purpose))}
	if req.MaxTokens == 0 {
		req.MaxTokens = defaultMaxTokens
	}
	if g.in.Config.LLM.Temperature == nil && g.in.Seeds > 1 {
		t := DefaultTemperature
		req.Temperature = &t
	}
	resp, err := g.in.LLM.Complete(ctx, req)
	var be *llm.BudgetExceededError
	refused := errors.As(err, &be) && resp.Usage.Total() == 0 && resp.Duration == 0
	if !refused {
		g.account(context.WithoutCancel(ctx), id, purpose, resp, err)
	}
	if err != nil {
		return "", fmt.Errorf("llm %s: %w", purpose, err)
	}
	if err := g.write(rel+".reply.md", resp.Text); err != nil {
		return "", err
	}
	return resp.Text, nil
}

// account adds one call to the usage and records it in the store.
func (g *gen) account(ctx context.Context, id string, purpose llm.Purpose, resp llm.Response, err error) {
	g.mu.Lock()
	g.usage.Calls++
	if err != nil {
		g.usage.Failed++
	}
	g.usage.PromptTokens += int64(resp.Usage.PromptTokens)
	g.usage.CompletionTokens += int64(resp.Usage.CompletionTokens)
	if resp.Usage.Estimated {
		g.usage.EstimatedCalls++
	}
	g.usage.CostUSD += resp.CostUSD
	g.usage.Duration += resp.Duration
	g.mu.Unlock()
	if g.in.Store == nil {
		return
	}
	call := store.LLMCall{RunID: g.runID, Round: 0, CandidateID: id, Purpose: string(purpose), Model: resp.Model,
		PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, UsageEstimated: resp.Usage.Estimated,
		CostUSD: resp.CostUSD, Duration: resp.Duration, Fingerprint: resp.Fingerprint}
	if call.Model == "" {
		call.Model = g.in.Config.LLM.ModelFor(string(purpose))
	}
	if err != nil {
		call.Error = oneLine(err.Error())
	}
	if _, rerr := g.in.Store.RecordLLMCall(ctx, call); rerr != nil {
		g.log.Warn("record llm call", "candidate", id, "err", rerr)
	}
}

// add writes an attempt's kernel and records it in the store as proposed.
func (g *gen) add(ctx context.Context, a Attempt, src string, failures []string) error {
	if err := os.MkdirAll(filepath.Dir(a.Path), 0o755); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if err := os.WriteFile(a.Path, []byte(src), 0o644); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if g.in.Store == nil {
		return nil
	}
	c := store.Candidate{RunID: g.runID, ID: a.ID, Round: 0, Direction: fmt.Sprintf("generate: seed %d", a.Seed),
		RefineAttempt: a.Attempt, Source: src}
	if a.Attempt > 0 {
		c.RefineOf = attemptID(a.Seed, a.Attempt-1)
		c.Direction += " (after " + failures[len(failures)-1] + ")"
	}
	if _, err := g.in.Store.AddCandidate(ctx, c); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	return nil
}

// record writes an attempt's verdict beside its kernel and in the store.
func (g *gen) record(ctx context.Context, a Attempt, v platform.Verdict) error {
	if err := writeJSON(filepath.Join(filepath.Dir(a.Path), "verdict.json"), v); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if g.in.Store == nil {
		return nil
	}
	st := store.StatusVerified
	if !v.Passed {
		st = store.StatusRejected
	}
	if _, err := g.in.Store.UpdateCandidate(context.WithoutCancel(ctx), g.runID, a.ID, store.Update{Status: st, Verdict: &v}); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	return nil
}

// write writes one artifact file.
func (g *gen) write(rel, data string) error {
	p := filepath.Join(g.dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		return fmt.Errorf("generate: %w", err)
	}
	return nil
}
