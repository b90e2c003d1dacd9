package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// LoadRequest is the load_problem request.
type LoadRequest struct {
	ProblemPath string           `json:"problem_path"`
	DType       string           `json:"dtype"`
	Seeds       []int64          `json:"seeds"`
	Shapes      []map[string]any `json:"shapes"`
	// Size overrides the problem's size constants for the timed shape (the
	// main draws); nil keeps the problem's own.
	Size         map[string]any `json:"size,omitempty"`
	TF32         string         `json:"tf32"`
	ATol         *float64       `json:"atol,omitempty"`
	RTol         *float64       `json:"rtol,omitempty"`
	AllowInplace bool           `json:"allow_inplace"`
	Atomics      bool           `json:"atomics"`
	TestPath     string         `json:"test_path"`

	// repin restores the pinned problem files before a load (see
	// kerneldir.Task.Repin); nil for a request not built from a task.
	repin func() error
}

// Repin makes the problem files the request names hold what kagent read
// from the kernel dir again, in case code that ran as the same user changed
// them. Every load calls it; so must anything else that hands the request's
// paths to a new process (a profiler's wrapper).
func (r LoadRequest) Repin() error {
	if r.repin == nil {
		return nil
	}
	return r.repin()
}

// The problem's description, as the platform contract names it.
type (
	TensorInfo  = platform.TensorInfo
	ProblemInfo = platform.ProblemInfo
	MemoryPlan  = platform.MemoryPlan
)

// PublicSeeds are the draws every run uses; a secret seed is added per run.
var PublicSeeds = []int64{1, 2}

// NewLoadRequest builds the load request of a task with the given secret seed.
func NewLoadRequest(t *kerneldir.Task, secretSeed int64) LoadRequest {
	tf32 := t.Options.TF32
	if tf32 == "" {
		tf32 = "forbid"
	}
	return LoadRequest{
		ProblemPath:  t.ProblemPath,
		DType:        t.Options.DType,
		Seeds:        append(append([]int64(nil), PublicSeeds...), secretSeed),
		Shapes:       t.Options.Shapes,
		Size:         t.Options.Size,
		TF32:         tf32,
		ATol:         t.Options.ATol,
		RTol:         t.Options.RTol,
		AllowInplace: t.Options.AllowInplace,
		Atomics:      t.Options.Atomics,
		TestPath:     t.TestPath,
		repin:        t.Repin,
	}
}

// EngineOptions tune an Engine.
type EngineOptions struct {
	LoadTimeout time.Duration
	// VerifyTimeout and BenchTimeout bound one verification and one timing;
	// 0 derives them from the problem (Engine.Limits).
	VerifyTimeout time.Duration
	BenchTimeout  time.Duration
	// ProfileTimeout bounds one hardware profile (Session.Profile); 0
	// derives it from the problem (Engine.ProfileLimit).
	ProfileTimeout time.Duration
	// RequireTriton: candidates must define and launch a Triton kernel.
	RequireTriton bool
	// Bench settings (milliseconds and bytes).
	WarmupMS   float64
	RepMS      float64
	FlushBytes int64
	// Representative is false on the cpu platform.
	Representative bool
	// Log receives warnings (memory plans, recycled workers); nil: none.
	Log *slog.Logger
}

// Engine verifies and times candidates of one problem on a worker pool. It
// loads the problem on each worker the first time that worker serves it,
// again after a restart.
type Engine struct {
	pool *Pool
	req  LoadRequest
	opts EngineOptions

	mu     sync.Mutex
	loaded map[*Worker]string // worker -> problem id
	info   *ProblemInfo
	// What the derived limits follow: the first load, the first passing
	// verification, the longest of the first timings.
	loadTook, verifyTook, benchTook time.Duration
	benchSeen                       int
}

// NewEngine binds a pool to a problem. The problem is loaded on first use.
func NewEngine(pool *Pool, req LoadRequest, o EngineOptions) *Engine {
	if o.LoadTimeout == 0 {
		o.LoadTimeout = 10 * time.Minute
	}
	if o.WarmupMS == 0 {
		o.WarmupMS = 25
	}
	if o.RepMS == 0 {
		o.RepMS = 100
	}
	return &Engine{pool: pool, req: req, opts: o, loaded: map[*Worker]string{}}
}

// ProblemError: the problem itself (problem.py) could not be loaded; no
// candidate is at fault.
type ProblemError struct{ Err error }

func (e *ProblemError) Error() string { return "load problem: " + e.Err.Error() }
func (e *ProblemError) Unwrap() error { return e.Err }

// Fault: a problem that cannot be loaded is never the candidate's fault.
func (e *ProblemError) Fault() (*platform.Fault, bool) { return nil, false }

// Is reports it as platform.ErrProblem.
func (e *ProblemError) Is(target error) bool { return target == platform.ErrProblem }

// with leases a worker with the problem loaded and runs fn on it.
func (e *Engine) with(ctx context.Context, fn func(w *Lease, problemID string) error) error {
	l, err := e.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer l.Release()
	e.mu.Lock()
	pid, ok := e.loaded[l.Worker]
	e.mu.Unlock()
	if !ok {
		var err error
		if pid, err = e.load(ctx, l); err != nil {
			return err
		}
	}
	return fn(l, pid)
}

// load loads the problem on a leased worker. A load that runs out of device
// memory is tried once more on a fresh worker: memory the old process held
// (a candidate's, its own) must not end the run. Only a fresh worker's
// failure is the problem's.
func (e *Engine) load(ctx context.Context, l *Lease) (string, error) {
	if err := e.req.Repin(); err != nil {
		return "", &ProblemError{Err: err}
	}
	var info ProblemInfo
	started := time.Now()
	err := l.Call(ctx, "load_problem", e.req, &info, e.opts.LoadTimeout)
	if isOOM(err) {
		e.logf("loading the problem ran out of device memory; retrying on a fresh worker", "err", err)
		if rerr := e.recycle(ctx, l); rerr != nil {
			return "", &ProblemError{Err: fmt.Errorf("%w (restarting the worker: %v)", err, rerr)}
		}
		if err = e.req.Repin(); err == nil {
			err = l.Call(ctx, "load_problem", e.req, &info, e.opts.LoadTimeout)
		}
	}
	if err != nil {
		return "", &ProblemError{Err: err}
	}
	e.note(&e.loadTook, time.Since(started), true)
	if m := info.Memory; m != nil {
		if m.Note != "" {
			e.logf("device memory is short for the problem", "plan", m.Note)
		}
		if m.BufferSets < m.MaxBufferSets && e.opts.Log != nil {
			e.opts.Log.Info("large inputs: fewer copies of them per candidate", "input_sets", m.BufferSets, "kept_runners", m.KeptRunners)
		}
	}
	e.mu.Lock()
	e.loaded[l.Worker] = info.ProblemID
	if e.info == nil {
		e.info = &info
	}
	e.mu.Unlock()
	return info.ProblemID, nil
}

// recycle replaces the leased worker by a fresh one; the problem is loaded
// on it at its next use.
func (e *Engine) recycle(ctx context.Context, l *Lease) error {
	e.mu.Lock()
	delete(e.loaded, l.Worker)
	e.mu.Unlock()
	return l.Recycle(ctx)
}

// afterOOM recycles the worker after a candidate ran out of device memory
// (err, or a verdict failed as "oom"): the run goes on with a fresh worker.
func (e *Engine) afterOOM(ctx context.Context, l *Lease, failure string, err error) {
	if failure != "oom" && !isOOM(err) {
		return
	}
	e.logf("a candidate ran out of device memory; recycling the worker", "slot", l.Slot())
	if rerr := e.recycle(ctx, l); rerr != nil {
		e.logf("recycling the worker failed; it is restarted at its next use", "err", rerr)
	}
}

// isOOM reports an out-of-memory error reply.
func isOOM(err error) bool {
	var re *ReplyError
	return errors.As(err, &re) && re.Kind == "oom"
}

func (e *Engine) logf(msg string, args ...any) {
	if e.opts.Log != nil {
		e.opts.Log.Warn(msg, args...)
	}
}

// release unloads the problem from a leased worker, freeing its device
// memory (inputs, references, rotation sets) for another process such as a
// profiler; the worker loads it again on its next use.
func (e *Engine) release(ctx context.Context, l *Lease) error {
	e.mu.Lock()
	pid, ok := e.loaded[l.Worker]
	delete(e.loaded, l.Worker)
	e.mu.Unlock()
	if !ok {
		return nil
	}
	return l.Call(ctx, "unload_problem", map[string]any{"problem_id": pid}, nil, e.opts.LoadTimeout)
}

// releaseAll frees the problem on every slot's worker, holding all slots
// meanwhile.
func (e *Engine) releaseAll(ctx context.Context) error {
	var leases []*Lease
	defer func() {
		for _, l := range leases {
			l.Release()
		}
	}()
	for range e.pool.Size() {
		l, err := e.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		leases = append(leases, l)
	}
	for _, l := range leases {
		if err := e.release(ctx, l); err != nil {
			return err
		}
	}
	return nil
}

// Info returns the problem's tensors, loading the problem if needed.
func (e *Engine) Info(ctx context.Context) (ProblemInfo, error) {
	e.mu.Lock()
	info := e.info
	e.mu.Unlock()
	if info != nil {
		return *info, nil
	}
	if err := e.with(ctx, func(*Lease, string) error { return nil }); err != nil {
		return ProblemInfo{}, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return *e.info, nil
}

type verifyRequest struct {
	ProblemID     string `json:"problem_id"`
	CandidatePath string `json:"candidate_path"`
	RequireTriton bool   `json:"require_triton"`
	CheckLaunch   bool   `json:"check_launch"`
	// CutoffMS: the quick cut (harness quickcut.py); 0 leaves it out.
	CutoffMS float64 `json:"cutoff_ms,omitempty"`
}

type verifyResult struct {
	Passed    bool               `json:"passed"`
	Checks    []platform.Check   `json:"checks"`
	Failure   string             `json:"failure"`
	Reason    string             `json:"reason"`
	MaxAbsErr *float64           `json:"max_abs_err"`
	RelL2     *float64           `json:"rel_l2"`
	Launches  int                `json:"launches"`
	TF32      string             `json:"tf32"`
	Phases    map[string]float64 `json:"phases"`
	// TritonCompiles is the runner's count of its Triton compiles.
	TritonCompiles *platform.TritonCompiles `json:"triton_compiles"`
	// QuickMS: the quick timing's median (harness quickcut.py).
	QuickMS *float64 `json:"quick_ms"`
}

// Verify runs every verification check on a candidate. Faults of the
// candidate (timeouts, crashes, CUDA errors) are failed verdicts, not errors;
// errors mean the check itself could not run.
func (e *Engine) Verify(ctx context.Context, c platform.Candidate) (platform.Verdict, error) {
	start := time.Now()
	var v platform.Verdict
	err := e.with(ctx, func(l *Lease, pid string) error {
		var r verifyResult
		limit, _ := e.Limits()
		began := time.Now()
		err := l.Call(ctx, "verify", verifyRequest{ProblemID: pid, CandidatePath: c.Path, RequireTriton: e.opts.RequireTriton,
			CheckLaunch: e.opts.RequireTriton, CutoffMS: c.CutoffMS}, &r, limit)
		if err == nil && r.Passed {
			e.note(&e.verifyTook, time.Since(began), true)
		}
		if err != nil {
			var ok bool
			if v, ok = faultVerdict(err, "verification", limit); ok {
				e.afterOOM(ctx, l, "", err)
				return nil
			}
			return err
		}
		e.afterOOM(ctx, l, r.Failure, nil)
		v = platform.Verdict{Passed: r.Passed, Checks: r.Checks, Failure: r.Failure, Reason: r.Reason, Launches: r.Launches, TF32: r.TF32,
			Phases: r.Phases, TritonCompiles: r.TritonCompiles}
		if r.MaxAbsErr != nil {
			v.MaxAbsErr = *r.MaxAbsErr
		}
		if r.RelL2 != nil {
			v.RelL2 = *r.RelL2
		}
		if r.QuickMS != nil && *r.QuickMS > 0 && !math.IsInf(*r.QuickMS, 0) {
			v.QuickMS = *r.QuickMS
		}
		if !v.Passed && v.Failure == "" {
			v.Failure, v.Reason = "verify", "the harness failed the candidate without naming a check"
		}
		if v.Passed {
			if missing := missingChecks(v.Checks); len(missing) > 0 {
				v.Passed = false
				v.Failure = "tamper"
				v.Reason = "the verdict passed without the checks " + strings.Join(missing, ", ") +
					": verification did not run to its end (the harness was changed); a kernel must not touch the harness"
			}
		}
		return nil
	})
	v.Duration = time.Since(start)
	return v, err
}

// passChecks are the checks a passing verdict must list, each passed or
// skipped with a reason (PROTOCOL.md, verify): a pass that lacks one did not
// come from the whole verification.
var passChecks = []string{
	"static", "import", "entry", "tamper", "correctness", "unwritten_output", "precision", "input_mutation",
	"determinism", "triton_launch", "extra_shapes", "caching", "user_test",
}

// missingChecks lists the passChecks a verdict lacks or reports failed.
func missingChecks(checks []platform.Check) []string {
	have := map[string]bool{}
	for _, c := range checks {
		have[c.Name] = c.Passed || c.Skipped
	}
	var missing []string
	for _, name := range passChecks {
		if !have[name] {
			missing = append(missing, name)
		}
	}
	return missing
}

// faultVerdict turns a worker fault during a candidate's call into a failed
// verdict. ok is false for errors that are not the candidate's doing.
func faultVerdict(err error, what string, limit time.Duration) (platform.Verdict, bool) {
	var te *TimeoutError
	var xe *ExitError
	var re *ReplyError
	fail := func(name, reason string) (platform.Verdict, bool) {
		return platform.Verdict{Failure: name, Reason: reason, Checks: []platform.Check{{Name: name, Reason: reason}}}, true
	}
	switch {
	case errors.As(err, &te):
		return fail("timeout", fmt.Sprintf("%s did not finish within %s (an infinite loop, a deadlock or a kernel that never ends); the worker was killed (timeouts.verify and timeouts.bench set the limits)", what, limit.Round(time.Second)))
	case errors.As(err, &xe):
		how := xe.Error()
		return fail("crash", fmt.Sprintf("the worker process died during %s: %s", what, how))
	case errors.As(err, &re):
		return fail(re.Kind, re.Message)
	}
	return platform.Verdict{}, false
}

type benchRequest struct {
	ProblemID     string  `json:"problem_id"`
	Target        string  `json:"target"`
	CandidatePath string  `json:"candidate_path,omitempty"`
	WarmupMS      float64 `json:"warmup_ms"`
	RepMS         float64 `json:"rep_ms"`
	MinReps       int     `json:"min_reps"`
	MaxReps       int     `json:"max_reps"`
	FlushBytes    int64   `json:"flush_bytes"`
	Rotate        bool    `json:"rotate"`
	Recheck       bool    `json:"recheck"`
	// RequireTriton is the session's Triton policy for a kernel target that
	// the worker has not loaded yet (a resumed run, another worker).
	RequireTriton bool `json:"require_triton"`
}

type benchStats struct {
	MedianMS       float64   `json:"median_ms"`
	P20MS          float64   `json:"p20_ms"`
	P80MS          float64   `json:"p80_ms"`
	MeanMS         float64   `json:"mean_ms"`
	CV             float64   `json:"cv"`
	N              int       `json:"n"`
	TimesMS        []float64 `json:"times_ms"`
	Method         string    `json:"method"`
	HostMedianMS   float64   `json:"host_median_ms"`
	Representative *bool     `json:"representative"`
	Unavailable    string    `json:"unavailable"`
	// Failure names a check that failed while timing (host_check: work
	// escaping the timed stream; caching: outputs changed), with Reason.
	Failure string `json:"failure"`
	Reason  string `json:"reason"`
	Recheck *struct {
		Passed bool   `json:"passed"`
		Reason string `json:"reason"`
	} `json:"recheck"`
	Unseen     *platform.UnseenCheck `json:"unseen_inputs"`
	Clock      string                `json:"clock"`
	LateCalls  int                   `json:"late_calls"`
	Phases     map[string]float64    `json:"phases"`
	TimedParts map[string]float64    `json:"timed_parts"`
	BracketMS  float64               `json:"bracket_ms"`
	EventMS    float64               `json:"event_median_ms"`
}

func (s benchStats) timing(label string, representative bool) platform.Timing {
	rep := representative
	if s.Representative != nil {
		rep = rep && *s.Representative
	}
	return platform.Timing{Target: label, MedianMS: s.MedianMS, P20MS: s.P20MS, P80MS: s.P80MS, MeanMS: s.MeanMS,
		CV: s.CV, N: s.N, TimesMS: s.TimesMS, HostMS: s.HostMedianMS, Representative: rep, Method: s.Method,
		Unavailable: s.Unavailable, Unseen: s.Unseen, Clock: s.Clock, LateCalls: s.LateCalls, Phases: s.Phases,
		TimedParts: s.TimedParts, BracketMS: s.BracketMS, EventMedianMS: s.EventMS}
}

// RecheckError: a check run while timing failed: the outputs of the timed
// calls no longer matched the reference (check 7, "caching"), or work escaped
// the timed stream ("host_check"). The candidate is rejected by Check.
type RecheckError struct {
	Check  string
	Reason string
}

func (e *RecheckError) Error() string { return e.Check + ": " + e.Reason }

// Fault: a check failed while the candidate was timed.
func (e *RecheckError) Fault() (*platform.Fault, bool) {
	check := e.Check
	if check == "" {
		check = "recheck"
	}
	return &platform.Fault{Check: check, Reason: e.Reason}, true
}

// failure returns the check that failed while timing, if any.
func (s benchStats) failure() error {
	if s.Failure != "" {
		return &RecheckError{Check: s.Failure, Reason: s.Reason}
	}
	if s.Recheck != nil && !s.Recheck.Passed {
		return &RecheckError{Check: "caching", Reason: s.Recheck.Reason}
	}
	return nil
}

func (e *Engine) benchRequest(pid string, t platform.Target) benchRequest {
	r := benchRequest{
		ProblemID: pid, Target: string(t.Kind), CandidatePath: t.Candidate.Path,
		WarmupMS: e.opts.WarmupMS, RepMS: e.opts.RepMS, MinReps: 10, MaxReps: 10000,
		FlushBytes: e.opts.FlushBytes, Rotate: true, Recheck: t.Kind == platform.TargetKernel,
		RequireTriton: e.opts.RequireTriton,
	}
	if b := t.Budget; b != nil {
		r.WarmupMS, r.RepMS = b.WarmupMS, b.RepMS
		if b.MinReps > 0 {
			r.MinReps = b.MinReps
		}
	}
	return r
}

// Time times a candidate or a baseline. A candidate whose timed outputs fail
// the re-check returns *RecheckError.
func (e *Engine) Time(ctx context.Context, t platform.Target) (platform.Timing, error) {
	var out platform.Timing
	err := e.with(ctx, func(l *Lease, pid string) error {
		var s benchStats
		// The baselines (the problem's own code, torch.compile's compile
		// included) are held to the configured limit or the cap; kernels to
		// the derived one.
		limit := cmp.Or(e.opts.BenchTimeout, LimitCap)
		if t.Kind == platform.TargetKernel {
			_, limit = e.Limits()
		}
		began := time.Now()
		if err := l.Call(ctx, "bench", e.benchRequest(pid, t), &s, limit); err != nil {
			e.afterOOM(ctx, l, "", err)
			return fmt.Errorf("time %s: %w", t.Label(), err)
		}
		if t.Kind == platform.TargetKernel {
			e.noteBench(time.Since(began))
		}
		out = s.timing(t.Label(), e.opts.Representative)
		if t.Budget != nil {
			out.Budget = t.Budget.Name
		}
		return s.failure()
	})
	return out, err
}

type compareRequest struct {
	ProblemID  string       `json:"problem_id"`
	A          benchRequest `json:"a"`
	B          benchRequest `json:"b"`
	WarmupMS   float64      `json:"warmup_ms"`
	RepMS      float64      `json:"rep_ms"`
	FlushBytes int64        `json:"flush_bytes"`
	Rotate     bool         `json:"rotate"`
}

// Compare times a and b interleaved (A B A B ...).
func (e *Engine) Compare(ctx context.Context, a, b platform.Target) (platform.Timing, platform.Timing, error) {
	var ta, tb platform.Timing
	err := e.with(ctx, func(l *Lease, pid string) error {
		req := compareRequest{ProblemID: pid, A: e.benchRequest(pid, a), B: e.benchRequest(pid, b),
			WarmupMS: e.opts.WarmupMS, RepMS: 2 * e.opts.RepMS, FlushBytes: e.opts.FlushBytes, Rotate: true}
		var r struct {
			A       benchStats `json:"a"`
			B       benchStats `json:"b"`
			Failure string     `json:"failure"`
			Reason  string     `json:"reason"`
		}
		limit := cmp.Or(e.opts.BenchTimeout, LimitCap)
		if a.Kind == platform.TargetKernel && b.Kind == platform.TargetKernel {
			_, limit = e.Limits()
		}
		if err := l.Call(ctx, "compare", req, &r, 2*limit); err != nil {
			e.afterOOM(ctx, l, "", err)
			return fmt.Errorf("compare %s with %s: %w", a.Label(), b.Label(), err)
		}
		ta, tb = r.A.timing(a.Label(), e.opts.Representative), r.B.timing(b.Label(), e.opts.Representative)
		if r.Failure != "" {
			return &RecheckError{Check: r.Failure, Reason: r.Reason}
		}
		if err := r.A.failure(); err != nil {
			return err
		}
		return r.B.failure()
	})
	return ta, tb, err
}

// Close releases the pool.
func (e *Engine) Close() error { return e.pool.Close() }

// Interface guards
var (
	_ platform.Verifier    = (*Engine)(nil)
	_ platform.Benchmarker = (*Engine)(nil)
	_ platform.Comparer    = (*Engine)(nil)
)
