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
	if _, err := p.materialize(c); err != nil {
		return c, err
	}
	v, err := p.in.Session.Verify(ctx, p.platformCandidate(c))
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

// timeCandidate times a verified candidate. A timing the candidate is to
// blame for (faster than physically possible, outputs changed, a crash)
// rejects it, keeping the timing when there is one.
func (p *pipeline) timeCandidate(ctx context.Context, c store.Candidate) (store.Candidate, error) {
	if _, err := p.materialize(c); err != nil {
		return c, err
	}
	t, err := p.in.Session.Time(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: p.platformCandidate(c)})
	if err == nil {
		return p.record(ctx, c, step{update: store.Update{Status: store.StatusTimed, Timing: &t}, file: "timing.json",
			body: t, event: timedEvent})
	}
	v, ok := timingFault(err)
	if !ok {
		return c, fmt.Errorf("time %s: %w", c.ID, err)
	}
	if t.MedianMS > 0 && t.N > 0 {
		// The timing the rejection is about is kept (the report shows it).
		if c, err = p.record(ctx, c, step{update: store.Update{Status: store.StatusTimed, Timing: &t},
			file: "timing.json", body: t}); err != nil {
			return c, err
		}
	}
	return p.record(ctx, c, step{update: store.Update{Status: store.StatusRejected, Verdict: &v}, file: "verdict.json",
		body: v, event: timedEvent})
}

// skipProfile says why the profiling policy leaves a timed candidate on the
// synthetic roofline, or "" to run the profiler. Under "improving" only the
// input is profiled when timed; a candidate is profiled when it becomes the
// best or a beam parent (profileSkipped), the only times its metrics are used.
func (p *pipeline) skipProfile(c store.Candidate) string {
	switch {
	case p.cfg.ProfileCandidates == configs.ProfileNone:
		return "profile_candidates is none"
	case p.cfg.ProfileCandidates == configs.ProfileAll || c.ParentID == "":
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
	if c.Status != store.StatusProfiled || c.Timing == nil || c.Metrics == nil ||
		!strings.HasPrefix(c.Metrics.Fallback, notProfiled) || p.cfg.ProfileCandidates == configs.ProfileNone {
		return c, nil
	}
	return p.profileCandidate(ctx, c, "")
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
	return p.record(ctx, c, step{update: store.Update{Status: store.StatusProfiled, Metrics: &m, Roofline: &res},
		file: "metrics.json", body: map[string]any{"metrics": m, "roofline": res}})
}
