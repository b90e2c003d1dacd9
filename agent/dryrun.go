package agent

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/search"
)

// DryRunInput is what DryRun needs.
type DryRunInput struct {
	Config   configs.Config
	Task     *kerneldir.Task
	Platform platform.Platform
	// LLM, when set, is asked the diagnosis and the rewrite; nil: prompts
	// are only rendered.
	LLM     llm.Client
	Prompts *prompts.Set
	RunDir  string
	Logger  *slog.Logger
}

// DryRunResult lists what a dry run wrote, relative to the run dir.
type DryRunResult struct {
	Prompts []string
	Replies []string
	// Kernel is the rewrite extracted from the model's reply ("" when no LLM
	// was called or the reply held no code).
	Kernel string
}

// dryDirection stands in for a diagnosed bottleneck when no LLM answers.
var dryDirection = prompts.Bottleneck{Rank: 1, Category: prompts.CategoryMemory,
	Summary:   "(dry run: the diagnosed bottleneck goes here)",
	Reasoning: "a real run fills this section from the model's diagnosis of the profiled kernel",
	Fixes:     []prompts.Fix{{Fix: "(the recommended fix goes here)"}}}

// DryRun renders every prompt a real run's first round would send, with
// nothing executed or timed (no times, no roofline), into
// <run dir>/round001/cand1/: diagnose, optimize, refine (with an example
// failure) and reflect. When an LLM is configured, the diagnosis and the
// rewrite are really asked, their replies saved, and the rewrite's code
// written to kernel.py (unverified).
func DryRun(ctx context.Context, in DryRunInput) (DryRunResult, error) {
	var res DryRunResult
	if in.Task == nil || in.Platform == nil {
		return res, fmt.Errorf("dry run: %w: no kernel dir or platform", ErrInvalidInput)
	}
	if search.WithoutLLM(in.Config.Strategy) {
		return res, nil // the strategy sends no prompts
	}
	if in.Prompts == nil {
		in.Prompts = prompts.Default()
	}
	if in.Logger == nil {
		in.Logger = slog.New(slog.DiscardHandler)
	}
	art, err := newArtifacts(in.RunDir)
	if err != nil {
		return res, err
	}
	specs, err := in.Platform.Specs(ctx)
	if err != nil {
		in.Logger.Warn("gpu specs unavailable", "err", err)
	}
	target := prompts.NewTarget(in.Config.TargetPlatform, in.Platform.Name(), in.Platform.Executes(), specs,
		string(in.Task.Entry), in.Task.Options.TF32)
	dir := candidateDir(store.CandidateID(1, 1, 0))
	m := 1
	if st, err := search.New(in.Config.Strategy, in.Config.SearchSettings(), nil); err == nil {
		m = max(1, st.Directions())
	}
	send := func(name string, purpose llm.Purpose, p prompts.Prompt) (string, error) {
		rel := dir + "/" + name
		if err := art.writePrompt(rel+".prompt.md", p); err != nil {
			return "", err
		}
		res.Prompts = append(res.Prompts, rel+".prompt.md")
		if in.LLM == nil || purpose == "" {
			return "", nil
		}
		resp, err := in.LLM.Complete(ctx, llm.Request{Messages: []llm.Message{llm.System(p.System), llm.User(p.User)},
			Purpose: purpose, MaxTokens: defaultMaxTokens[purpose]})
		if err != nil {
			return "", fmt.Errorf("dry run: %w", err)
		}
		if err := art.write(rel+".reply.md", []byte(resp.Text)); err != nil {
			return "", err
		}
		res.Replies = append(res.Replies, rel+".reply.md")
		return resp.Text, nil
	}

	p, err := in.Prompts.Diagnose(prompts.DiagnoseData{Target: target, Problem: in.Task.ProblemSource,
		Kernel: in.Task.KernelSource, NumBottlenecks: m})
	if err != nil {
		return res, err
	}
	reply, err := send("diagnose", llm.PurposeDiagnose, p)
	if err != nil {
		return res, err
	}
	b := dryDirection
	if reply != "" {
		var d prompts.Diagnosis
		if err := llm.ExtractJSON(reply, &d); err == nil {
			if d = d.Normalize(m); d.Validate() == nil {
				b = d.Bottlenecks[0]
			}
		}
	}
	if p, err = in.Prompts.Optimize(prompts.OptimizeData{Target: target, Problem: in.Task.ProblemSource,
		Kernel: in.Task.KernelSource, Bottleneck: b}); err != nil {
		return res, err
	}
	if reply, err = send("optimize", llm.PurposeOptimize, p); err != nil {
		return res, err
	}
	if reply != "" {
		if src, err := llm.ExtractPython(reply); err == nil {
			res.Kernel = dir + "/kernel.py"
			if err := art.write(res.Kernel, []byte(src)); err != nil {
				return res, err
			}
		}
	}
	if p, err = in.Prompts.Refine(prompts.RefineData{Target: target, Problem: in.Task.ProblemSource,
		Kernel: in.Task.KernelSource, Failure: "correctness", Reason: "(dry run: the verifier's one-line reason goes here)",
		Attempt: 1, MaxAttempts: in.Config.RefineAttempts, Direction: b.Direction()}); err != nil {
		return res, err
	}
	if _, err = send("refine", "", p); err != nil {
		return res, err
	}
	if p, err = in.Prompts.Reflect(prompts.ReflectData{Target: target, Round: 1, Bottleneck: b, Passed: true}); err != nil {
		return res, err
	}
	if _, err = send("reflect", "", p); err != nil {
		return res, err
	}
	return res, nil
}
