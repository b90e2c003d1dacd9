package agent

import (
	"context"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
	"github.com/kagent-kernels/kagent/search"
)

// Failure names the loop itself gives (the harness and the platform's
// faults name the others: static, correctness, physical_limit, timeout, ...).
const (
	failExtract = "extract"   // the reply held no Python code
	failDup     = "duplicate" // the source repeats a candidate of the run
	failGate    = "acceptance"
)

// rejection builds a failed verdict with one check.
func rejection(name, reason string) platform.Verdict {
	return platform.Verdict{Failure: name, Reason: reason, Checks: []platform.Check{{Name: name, Reason: reason}}}
}

// cutoff is the time a slot's candidate must beat in a quick timing to be
// verified in full (platform.Candidate.CutoffMS): the best's full timing
// plus strategy_config.cut_slower_pct, for a knob variant timed in full; 0
// (no cut) otherwise. An LLM's rewrite is always verified (its failures
// teach the refinement), and a screening rung times its variants on purpose.
// A variant slower than the best can neither be promoted nor lead the next
// round (search's tune), so cutting it changes no decision of the search.
// A best timed by the profiler's clock gives no cutoff: the quick timing
// reads device events, which run longer than the kernels' own records.
func (l *loop) cutoff(v view, s search.Slot) float64 {
	pct := l.cfg.StrategyConfig.CutSlowerPct
	if pct <= 0 || s.Variant == nil || s.Screening() {
		return 0
	}
	best, ok := v.h.ByID[v.bestID]
	if !ok || best.Timing == nil || best.Timing.Screening() || best.MedianMS() <= 0 ||
		best.Timing.Clock == platform.ClockProfiler {
		return 0
	}
	return best.MedianMS() * (1 + pct/100)
}

// timingFault turns an error from timing a candidate into a failed verdict
// when the candidate is at fault (physically impossible time, outputs that
// changed, a crash, a hang, a failed check while timing). ok is false for
// errors that are not the candidate's doing: those end the run.
func timingFault(err error) (platform.Verdict, bool) {
	if f, ok := platform.FaultOf(err); ok {
		return rejection(f.Check, f.Reason), true
	}
	return platform.Verdict{}, false
}

// notProfiled starts the Fallback of a candidate the profiling policy
// skipped; such a candidate is profiled if it becomes the best or a parent.
const notProfiled = "not profiled: "

// profile measures a kernel's metrics and places it on the roofline. A
// profiler that cannot run here (noop, not implemented, failed) falls back
// to the synthetic roofline: the measured time against the bytes and FLOPs
// counted from the problem's tensors.
// A non-empty skipped leaves the profiler out (configs.ProfileCandidates)
// and is recorded as the reason.
func (p *pipeline) profile(ctx context.Context, c platform.Candidate, t platform.Timing, skipped string) (roofline.Metrics, roofline.Result) {
	var m roofline.Metrics
	if skipped != "" {
		m = roofline.Metrics{Source: "synthetic", Fallback: notProfiled + skipped}
	} else {
		var err error
		if m, err = p.in.Session.Profile(ctx, c); err != nil {
			if ctx.Err() == nil {
				p.log.Warn("profiling failed; using the synthetic roofline", "candidate", c.ID, "err", err)
			}
			m = roofline.Metrics{Source: "synthetic", Fallback: "profiler: " + oneLine(err.Error())}
		}
	}
	if m.Source == "" {
		m.Source = "synthetic"
	}
	if m.TimeMS <= 0 {
		m.TimeMS = t.MedianMS
	}
	if m.BytesRead+m.BytesWrite == 0 && m.FLOPs == 0 {
		if info, ok := p.problemInfo(ctx); ok {
			m.BytesRead, m.BytesWrite = info.BytesIn, info.BytesOut
			if info.FLOPs != nil {
				m.FLOPs = *info.FLOPs
			}
			if m.DType == "" && len(info.Inputs) > 0 {
				m.DType = roofline.CanonicalDType(info.Inputs[0].DType)
			}
		}
	}
	if m.DType == "" && p.in.Task.Options.DType != "" {
		m.DType = p.in.Task.Options.DType
	}
	return m, p.in.Platform.Analyzer().Analyze(m, p.specs)
}

// problemInfo asks a worker-backed session for the problem's tensors, once.
func (p *pipeline) problemInfo(ctx context.Context) (platform.ProblemInfo, bool) {
	p.infoOnce.Do(func() {
		pi, ok := p.in.Session.(platform.ProblemInformer)
		if !ok {
			return
		}
		info, err := pi.Info(ctx)
		if err != nil {
			p.log.Warn("problem info unavailable", "err", err)
			return
		}
		p.info = &info
	})
	if p.info == nil {
		return platform.ProblemInfo{}, false
	}
	return *p.info, true
}

// compare times the candidate against the best, interleaved when the
// session can, else from the two stored timings; a candidate whose own
// timing settles it (promotionRule.settledBySolo) is not timed again.
func (p *pipeline) compare(ctx context.Context, best, cand platform.Candidate, bestT, candT platform.Timing) (Decision, platform.Timing, platform.Timing, error) {
	rule := promotionRule{MinPct: p.cfg.MinImprovementPct, NoiseFactor: p.cfg.NoiseFactor}
	if d, ok := rule.settledBySolo(bestT, candT); ok {
		d.Best, d.Candidate = best.ID, cand.ID
		return d, bestT, candT, nil
	}
	cmp, ok := p.in.Session.(platform.Comparer)
	if !ok {
		d := rule.decide(bestT, candT)
		d.Best, d.Candidate = best.ID, cand.ID
		return d, bestT, candT, nil
	}
	var d Decision
	var ta, tb platform.Timing
	// A win lost in the noise is timed once more: a burst of load on the
	// machine should not decide it.
	for attempt := 0; attempt < 2; attempt++ {
		var err error
		ta, tb, err = cmp.Compare(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: best},
			platform.Target{Kind: platform.TargetKernel, Candidate: cand})
		if err != nil {
			return Decision{}, ta, tb, err
		}
		d = rule.decide(ta, tb)
		d.Best, d.Candidate, d.Interleaved = best.ID, cand.ID, true
		if d.Promoted || d.ImprovementPct <= rule.MinPct {
			break
		}
	}
	return d, ta, tb, nil
}
