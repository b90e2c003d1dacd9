package agent

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// pipeline takes one candidate through its steps: its source recorded and
// written, verification, timing, profiling and its place on the roofline,
// each step recorded in the store, its artifact and the event stream
// (record). It knows nothing of rounds, strategies or the LLM: the loop (the
// driver) decides which candidates go through it and what their results
// mean for the search.
type pipeline struct {
	in    RunInput
	cfg   configs.Config
	st    *store.Store
	runID string
	art   *artifacts
	ev    *emitter
	log   *slog.Logger
	specs roofline.Specs

	infoOnce sync.Once
	info     *platform.ProblemInfo

	fps fingerprints
}

// add records a new candidate and writes its source. A reply without code
// (xerr) is rejected as "extract"; a source that repeats one of the run
// (same normalised-source hash), or whose code fingerprint does
// (codeDuplicate), is rejected as "duplicate" without running.
func (p *pipeline) add(ctx context.Context, c store.Candidate, src string, xerr error) (store.Candidate, error) {
	return p.addChecked(ctx, c, src, xerr, true)
}

// addVariant records a knob variant. Variants are compared by source only:
// each sets the launch parameters or constexprs differently by
// construction, so a code fingerprint (a runner start and a call per
// variant) would seldom find a repeat and would add to every variant's
// cost, which is what a tuner's search spends.
func (p *pipeline) addVariant(ctx context.Context, c store.Candidate, src string) (store.Candidate, error) {
	return p.addChecked(ctx, c, src, nil, false)
}

func (p *pipeline) addChecked(ctx context.Context, c store.Candidate, src string, xerr error, byCode bool) (store.Candidate, error) {
	c.Source = src
	c, err := p.st.AddCandidate(ctx, c)
	if err != nil {
		return c, err
	}
	if _, err := p.materialize(c); err != nil {
		return c, err
	}
	var v *platform.Verdict
	if xerr != nil {
		v = ptr(rejection(failExtract, oneLine(xerr.Error())))
	} else if first, err := p.st.CandidateByHash(ctx, p.runID, c.SourceHash); err == nil && first.ID != c.ID {
		v = ptr(rejection(failDup, fmt.Sprintf("the kernel is the same as %s (after normalising whitespace and comments); propose a different change", first.ID)))
	} else if byCode {
		if v, err = p.codeDuplicate(ctx, c); err != nil {
			return c, err
		}
	}
	if v == nil {
		return c, nil
	}
	return p.record(ctx, c, step{update: store.Update{Status: store.StatusRejected, Verdict: v},
		file: "verdict.json", body: v, event: verifiedEvent})
}

// materialize writes a candidate's source to its kernel.py (again after a
// resume) and returns the path.
func (p *pipeline) materialize(c store.Candidate) (string, error) {
	path := p.art.kernelPath(c.ID)
	if b, err := os.ReadFile(path); err == nil && string(b) == c.Source {
		return path, nil
	}
	return path, p.art.write(candidateFile(c.ID, "kernel.py"), []byte(c.Source))
}

func (p *pipeline) platformCandidate(c store.Candidate) platform.Candidate {
	return platform.Candidate{ID: c.ID, Path: p.art.kernelPath(c.ID), Source: c.Source}
}

// verify runs every verification check on a candidate (the static check
// first) and records the verdict.
func (p *pipeline) verify(ctx context.Context, c store.Candidate) (store.Candidate, error) {
	return p.verifyCut(ctx, c, 0)
}

// verifyCut is verify with a cutoff (platform.Candidate.CutoffMS): a
// positive one lets the verification stop after a quick timing slower
// than it, as platform.FailureSlower.
func (p *pipeline) verifyCut(ctx context.Context, c store.Candidate, cutoffMS float64) (store.Candidate, error) {
	if _, err := p.materialize(c); err != nil {
		return c, err
	}
	pc := p.platformCandidate(c)
	pc.CutoffMS = cutoffMS
	v, err := p.in.Session.Verify(ctx, pc)
	if err != nil {
		return c, fmt.Errorf("verify %s: %w", c.ID, err)
	}
	st := store.StatusVerified
	if !v.Passed {
		st = store.StatusRejected
	}
	return p.record(ctx, c, step{update: store.Update{Status: st, Verdict: &v}, file: "verdict.json", body: v,
		event: verifiedEvent})
}

// timeCandidate times a verified candidate, with a screening budget when b
// is not nil (the timing is labelled with it). A timing the candidate is to
// blame for (faster than physically possible, outputs changed, a crash)
// rejects it, keeping the timing when there is one.
func (p *pipeline) timeCandidate(ctx context.Context, c store.Candidate, b *platform.Budget) (store.Candidate, error) {
	if _, err := p.materialize(c); err != nil {
		return c, err
	}
	t, err := p.in.Session.Time(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: p.platformCandidate(c), Budget: b})
	if err == nil {
		return p.record(ctx, c, step{update: store.Update{Status: store.StatusTimed, Timing: &t}, file: timingFile(t),
			body: t, event: timedEvent})
	}
	v, ok := timingFault(err)
	if !ok {
		return c, fmt.Errorf("time %s: %w", c.ID, err)
	}
	if t.MedianMS > 0 && t.N > 0 {
		// The timing the rejection is about is kept (the report shows it).
		if c, err = p.record(ctx, c, step{update: store.Update{Status: store.StatusTimed, Timing: &t},
			file: timingFile(t), body: t}); err != nil {
			return c, err
		}
	}
	return p.record(ctx, c, step{update: store.Update{Status: store.StatusRejected, Verdict: &v}, file: "verdict.json",
		body: v, event: timedEvent})
}

// budget is the screening budget for a share of the configured timing (nil
// for the full timing: a share of 0 or 1 and up).
func (p *pipeline) budget(share float64) *platform.Budget {
	if share <= 0 || share >= 1 {
		return nil
	}
	return &platform.Budget{Name: fmt.Sprintf("screen %.3g%%", share*100), WarmupMS: p.cfg.BenchmarkWarmup * share,
		RepMS: p.cfg.BenchmarkRepeat * share, MinReps: screenMinReps}
}

// screenMinReps is the least number of timed calls of a screening timing.
const screenMinReps = 3

// timingFile is the artifact a timing is written to: timing.json for the
// full timing, timing-screen-<percent>.json for a screening one, so the
// rungs of successive halving each leave their own.
func timingFile(t platform.Timing) string {
	if !t.Screening() {
		return "timing.json"
	}
	return "timing-" + strings.NewReplacer(" ", "-", "%", "pct").Replace(t.Budget) + ".json"
}

// retime times a measured candidate of an earlier round again with budget
// b (successive halving's later rungs): the new timing replaces the stored
// one and the candidate is placed on the roofline again. A candidate
// already timed with that budget (a resumed round) is only placed, if it
// was not yet; a rejected or failed one is returned as it is.
func (p *pipeline) retime(ctx context.Context, c store.Candidate, b *platform.Budget) (store.Candidate, error) {
	want := ""
	if b != nil {
		want = b.Name
	}
	if !c.Status.Measured() {
		return c, nil
	}
	if c.Status == store.StatusTimed {
		// Interrupted between its timing and its placement.
		var err error
		if c, err = p.profileCandidate(ctx, c, p.skipProfile(c)); err != nil {
			return c, err
		}
	}
	if c.Timing != nil && c.Timing.Budget == want {
		return c, nil
	}
	before := c.Metrics
	c, err := p.timeCandidate(ctx, c, b)
	if err != nil || c.Status != store.StatusTimed {
		return c, err
	}
	// A profile does not depend on the timing budget: a candidate the
	// profiler already ran on is placed again from its metrics (a synthetic
	// one at the new time), not profiled a second time.
	if before != nil && !strings.HasPrefix(before.Fallback, notProfiled) {
		m := *before
		if m.Source == "synthetic" {
			m.TimeMS = c.Timing.MedianMS
		}
		return p.recordMetrics(ctx, c, m, p.in.Platform.Analyzer().Analyze(m, p.specs))
	}
	return p.profileCandidate(ctx, c, p.skipProfile(c))
}

// skipProfile says why the profiling policy leaves a timed candidate on the
// synthetic roofline, or "" to run the profiler. Under "improving" only the
// input is profiled when timed; a candidate is profiled when it becomes the
// best or a beam parent (profileSkipped), the only times its metrics are used.
// Under "final" no candidate, the input included, is profiled when timed: the
// best is profiled once, when the run ends, and a parent before its diagnosis.
func (p *pipeline) skipProfile(c store.Candidate) string {
	switch p.cfg.ProfileCandidates {
	case configs.ProfileNone:
		return "profile_candidates is none"
	case configs.ProfileAll:
		return ""
	case configs.ProfileFinal:
		return "profiled only if it is the best when the run ends, or a parent"
	}
	if c.ParentID == "" {
		return ""
	}
	return "profiled only if it becomes the best or a parent"
}

// profileSkipped runs the profiler on a candidate the policy left on the
// synthetic roofline, once it matters: it became the best (the roofline stop
// rule and the report read its metrics) or a parent about to be diagnosed.
// The profile replaces the stored synthetic metrics, so no kernel is
// profiled twice; any other candidate is returned as it is.
func (p *pipeline) profileSkipped(ctx context.Context, c store.Candidate) (store.Candidate, error) {
	if !p.profilePending(c) {
		return c, nil
	}
	return p.profileCandidate(ctx, c, "")
}

// profilePending reports whether c was timed but left unprofiled, for
// profileSkipped to profile.
func (p *pipeline) profilePending(c store.Candidate) bool {
	return c.Status == store.StatusProfiled && c.Timing != nil && c.Metrics != nil &&
		strings.HasPrefix(c.Metrics.Fallback, notProfiled) && p.cfg.ProfileCandidates != configs.ProfileNone
}

// profileCandidate profiles a timed candidate (or, with skipped set, leaves
// it on the synthetic roofline) and places it on the roofline.
func (p *pipeline) profileCandidate(ctx context.Context, c store.Candidate, skipped string) (store.Candidate, error) {
	if _, err := p.materialize(c); err != nil {
		return c, err
	}
	m, res := p.profile(ctx, p.platformCandidate(c), *c.Timing, skipped)
	if err := ctx.Err(); err != nil {
		return c, err
	}
	return p.recordMetrics(ctx, c, m, res)
}

// recordMetrics records a timed candidate's metrics and roofline placement.
func (p *pipeline) recordMetrics(ctx context.Context, c store.Candidate, m roofline.Metrics, res roofline.Result) (store.Candidate, error) {
	return p.record(ctx, c, step{update: store.Update{Status: store.StatusProfiled, Metrics: &m, Roofline: &res},
		file: "metrics.json", body: map[string]any{"metrics": m, "roofline": res}})
}
