package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// screenCap bounds one screen call, however many variants it carries.
const screenCap = 30 * time.Minute

type screenRequest struct {
	ProblemID      string   `json:"problem_id"`
	CandidatePaths []string `json:"candidate_paths"`
	RequireTriton  bool     `json:"require_triton"`
	Calls          int      `json:"calls,omitempty"`
	WarmupMS       float64  `json:"warmup_ms,omitempty"`
	Threads        int      `json:"threads,omitempty"`
	HeldOut        string   `json:"held_out,omitempty"`
}

type screenResult struct {
	Results  []platform.Screening `json:"results"`
	Method   string               `json:"method"`
	Compiled int                  `json:"compiled"`
	Phases   map[string]float64   `json:"phases"`
}

// Screen ranks the candidates (knob variants of one kernel) in one worker
// call (the screen op). A call that hangs past its limit or kills the worker
// is split in halves, each screened on a fresh worker, until the variant
// that caused it is alone; it then fails as a timeout or crash and the
// others keep their screens.
func (e *Engine) Screen(ctx context.Context, cs []platform.Candidate, o platform.ScreenOptions) (platform.ScreenReport, error) {
	start := time.Now()
	rep := platform.ScreenReport{Results: make([]platform.Screening, len(cs)), Phases: map[string]float64{}}
	if err := e.screen(ctx, cs, o, rep.Results, &rep); err != nil {
		return platform.ScreenReport{}, err
	}
	rep.Duration = time.Since(start)
	return rep, nil
}

func (e *Engine) screen(ctx context.Context, cs []platform.Candidate, o platform.ScreenOptions, out []platform.Screening, rep *platform.ScreenReport) error {
	if len(cs) == 0 {
		return nil
	}
	var r screenResult
	verify, bench := e.Limits()
	limit := min(screenCap, verify+time.Duration(len(cs))*(bench/4))
	err := e.with(ctx, func(l *Lease, pid string) error {
		req := screenRequest{ProblemID: pid, RequireTriton: e.opts.RequireTriton, Calls: o.Calls, WarmupMS: o.WarmupMS, Threads: o.Threads,
			HeldOut: o.HeldOut}
		for _, c := range cs {
			req.CandidatePaths = append(req.CandidatePaths, c.Path)
		}
		rep.Calls++
		return l.Call(ctx, "screen", req, &r, limit)
	})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		v, ok := faultVerdict(err, "the screen", limit)
		switch {
		case !ok:
			return fmt.Errorf("screen %d variants: %w", len(cs), err)
		case len(cs) == 1:
			out[0] = platform.Screening{ID: cs[0].ID, Failure: v.Failure, Reason: v.Reason}
			return nil
		}
		h := len(cs) / 2
		if err := e.screen(ctx, cs[:h], o, out[:h], rep); err != nil {
			return err
		}
		return e.screen(ctx, cs[h:], o, out[h:], rep)
	}
	if len(r.Results) != len(cs) {
		return fmt.Errorf("screen: %d results for %d variants: %w", len(r.Results), len(cs), ErrProtocol)
	}
	for i, s := range r.Results {
		s.ID = cs[i].ID
		if !s.Passed && s.Failure == "" {
			s.Failure = "screen"
		}
		out[i] = s
	}
	rep.Method, rep.Compiled = r.Method, rep.Compiled+r.Compiled
	for k, v := range r.Phases {
		rep.Phases[k] += v
	}
	return nil
}

type compileAheadRequest struct {
	ProblemID      string   `json:"problem_id"`
	CandidatePaths []string `json:"candidate_paths"`
	RequireTriton  bool     `json:"require_triton"`
}

// CompileAhead compiles the candidates' kernels in one worker call (the
// compile_ahead op), before their verifications. The call is bounded by the
// verification limit plus a quarter of it per candidate; a call that times
// out or kills the worker is an error (the worker is replaced as after any
// fault), and the candidates then compile at their verification.
func (e *Engine) CompileAhead(ctx context.Context, cs []platform.Candidate) (platform.CompileReport, error) {
	start := time.Now()
	if len(cs) == 0 {
		return platform.CompileReport{Skipped: "no candidate"}, nil
	}
	verify, _ := e.Limits()
	limit := min(screenCap, verify+time.Duration(len(cs))*(verify/4))
	var rep platform.CompileReport
	err := e.with(ctx, func(l *Lease, pid string) error {
		req := compileAheadRequest{ProblemID: pid, RequireTriton: e.opts.RequireTriton}
		for _, c := range cs {
			req.CandidatePaths = append(req.CandidatePaths, c.Path)
		}
		return l.Call(ctx, "compile_ahead", req, &rep, limit)
	})
	rep.Duration = time.Since(start)
	if err != nil {
		return rep, fmt.Errorf("compile %d candidates ahead: %w", len(cs), err)
	}
	return rep, nil
}

// Interface guards
var (
	_ platform.Screener       = (*Session)(nil)
	_ platform.CompileAheader = (*Session)(nil)
)
