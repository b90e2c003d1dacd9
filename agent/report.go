package agent

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/internal/relpath"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// writeReport writes report.md, report.json and the plots into the run dir.
func (l *loop) writeReport(ctx context.Context, res Result) error {
	d, err := l.reportData(context.WithoutCancel(ctx), res)
	if err != nil {
		return err
	}
	return report.Write(l.art.dir, d)
}

// reportData gathers what the report shows from the store.
func (l *loop) reportData(ctx context.Context, res Result) (report.Data, error) {
	detail, err := l.st.GetRun(ctx, l.runID)
	if err != nil {
		return report.Data{}, err
	}
	calls, err := l.st.LLMCalls(ctx, l.runID)
	if err != nil {
		return report.Data{}, err
	}
	byCand := map[string]report.Usage{}
	for _, c := range calls {
		u := byCand[c.CandidateID]
		u.Calls++
		u.PromptTokens += int64(c.PromptTokens)
		u.CompletionTokens += int64(c.CompletionTokens)
		if c.UsageEstimated {
			u.EstimatedCalls++
		}
		u.CostUSD += c.CostUSD
		byCand[c.CandidateID] = u
	}
	tf32 := l.in.Task.Options.TF32
	if tf32 == "" {
		tf32 = "forbid"
	}
	rel := relative(l.art.dir, l.in.Task.Dir)
	d := report.Data{
		RunID: l.runID, Name: l.in.Task.Name, KernelDir: relpath.Rel(l.art.dir, l.in.Task.Dir), Strategy: l.cfg.Strategy,
		Platform: l.in.Platform.Name(), Device: l.device, Isolation: l.isolation, TF32: tf32, Representative: res.Representative,
		Size:      l.in.Task.Options.SizeLabel(),
		StartedAt: detail.StartedAt, FinishedAt: detail.FinishedAt, BestID: res.Best.ID, StopReason: rel(res.StopReason),
		LLM: report.Usage{Calls: res.Usage.Calls, PromptTokens: res.Usage.PromptTokens,
			CompletionTokens: res.Usage.CompletionTokens, EstimatedCalls: res.Usage.EstimatedCalls, CostUSD: res.Usage.CostUSD},
	}
	for _, m := range slices.Sorted(maps.Keys(res.Usage.ByModel)) {
		t := res.Usage.ByModel[m]
		d.Models = append(d.Models, report.ModelUsage{Model: m, Usage: report.Usage{Calls: t.Calls, PromptTokens: t.PromptTokens,
			CompletionTokens: t.CompletionTokens, EstimatedCalls: t.EstimatedCalls, CostUSD: t.CostUSD}})
	}
	if u := res.Usage; u.EstimatedCalls > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("the LLM server reported no token usage for %d of %d calls: kagent estimated "+
			"their tokens from the text (on the high side), and their cost and the budget count the estimates", u.EstimatedCalls, u.Calls))
	}
	d.DType = l.in.Task.Options.DType
	info, haveInfo := l.problemInfo(ctx)
	if d.DType == "" && haveInfo && len(info.Inputs) > 0 {
		d.DType = roofline.CanonicalDType(info.Inputs[0].DType)
	}
	d.GPU = report.GPU{Name: l.specs.Name, Units: l.specs.Units, MemBWGBs: l.specs.MemBWGBs, MemGB: l.specs.MemGB, L2MB: l.specs.L2MB}
	if d.DType != "" {
		if peak, _, err := l.specs.PeakTFLOPS(d.DType); err == nil {
			d.GPU.PeakTFLOPS = peak
		}
	}
	if haveInfo {
		d.Work.Bytes = info.BytesIn + info.BytesOut
		if info.FLOPs != nil {
			d.Work.FLOPs = *info.FLOPs
		}
		d.Work.FloorMS = res.FloorMS
	}
	d.Baselines.Eager = stats(res.Eager)
	d.Baselines.Compile = stats(res.Compile)
	d.Baselines.Input = stats(&res.Input.Timing)
	for _, c := range detail.Candidates {
		rc := report.Candidate{ID: c.ID, Round: c.Round, Parent: c.ParentID, Bottleneck: c.Bottleneck,
			Direction: rel(c.Direction), Status: string(c.Status), Time: stats(c.Timing), LLM: byCand[c.ID]}
		if label, ok := strings.CutPrefix(c.Direction, "tune: "); ok {
			rc.Label = label
		}
		if c.Verdict != nil && !c.Verdict.Passed {
			rc.Failure, rc.Reason = c.Verdict.Failure, rel(c.Verdict.Reason)
			rc.DuplicateBy = DuplicateBy(c.Verdict)
			rc.Cut = c.Verdict.Failure == platform.FailureSlower
		}
		if c.Status == store.StatusFailed {
			rc.Reason = rel(c.Error)
		}
		if c.Metrics != nil {
			rc.Bytes, rc.FLOPs = c.Metrics.BytesRead+c.Metrics.BytesWrite, c.Metrics.FLOPs
		}
		if c.Roofline != nil {
			rc.RooflineClass, rc.SOL = string(c.Roofline.Class), c.Roofline.SOL
		}
		d.Candidates = append(d.Candidates, rc)
	}
	if !res.Representative {
		d.Notes = append(d.Notes, "timings on the "+l.in.Platform.Name()+" platform are not representative of GPU performance")
	}
	if res.Acceptance != nil {
		d.Notes = append(d.Notes, "the best kernel passed the acceptance gate (a fresh process, new seeds)")
	}
	if l.scr != nil {
		ids := map[string]string{}
		for _, c := range detail.Candidates {
			if c.Verdict != nil && c.Verdict.Passed {
				ids[store.SourceHash(c.Source)] = c.ID
			}
		}
		if d.Screening, err = l.scr.summary(ids); err != nil {
			return report.Data{}, err
		}
	}
	return d, nil
}

// relative rewrites the paths in a report's text: those under the run dir
// relative to it, the others under the kernel dir relative to that, so that
// a report holds no absolute path.
func relative(runDir, kernelDir string) func(string) string {
	roots := []relpath.Root{{Dir: runDir}, {Dir: kernelDir}}
	return func(s string) string { return relpath.Text(s, roots...) }
}

func stats(t *platform.Timing) report.Stats {
	if t == nil {
		return report.Stats{}
	}
	return report.Stats{MedianMS: t.MedianMS, P20MS: t.P20MS, P80MS: t.P80MS, CV: t.CV, N: t.N, Unavailable: t.Unavailable,
		HostMS: t.HostMS, HostBound: t.HostBound(), Clock: t.Clock, Late: t.LateCalls, Budget: t.Budget}
}
