package worker

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/harness"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/profiler/synthetic"
	"github.com/kagent-kernels/kagent/roofline"
)

// SessionConfig describes a worker-backed session.
type SessionConfig struct {
	Python string
	Device string // "cuda" or "cpu"
	// Slots holds one extra environment per worker, e.g. CUDA_VISIBLE_DEVICES=0;
	// nil means one worker with no extra variables.
	Slots    [][]string
	Env      []string
	Spare    bool
	Isolate  bool
	CacheDir string
	Engine   EngineOptions
	// Specs resolves the GPU from the worker's handshake; nil = no GPU specs
	// (no physical-limit check).
	Specs  func(Hello) (roofline.Specs, error)
	Logger *slog.Logger
	// SecretSeed is the per-run draw never shown to the LLM; 0 picks one.
	SecretSeed int64
	// TritonIfImportable sets Engine.RequireTriton from the handshake: Triton
	// is required exactly when the worker can import it (the cpu platform).
	TritonIfImportable bool
	// Profiler builds the hardware profiler of one slot (its GPU); nil means
	// the synthetic roofline (measured time, counted bytes and flops).
	Profiler func(p ProfilerSetup) (platform.Profiler, error)
}

// ProfilerSetup is what a profiler factory gets: the harness, the problem as
// the workers load it, and the slot's environment (its GPU).
type ProfilerSetup struct {
	HarnessDir string
	// CacheDir is kagent's cache (where the harness copy and Triton's
	// cache live), for what a profiler remembers across runs.
	CacheDir string
	Load     LoadRequest
	Entry    string
	SlotEnv  []string
	Env      []string
	Specs    roofline.Specs
	// Info describes the problem's tensors (for synthetic fallbacks).
	Info func(ctx context.Context) (ProblemInfo, error)
	// Logger is the session's (nil = discard).
	Logger *slog.Logger
}

// Session is a platform.Session on warm workers, with the physical-limit
// check (verification check 8) applied to every timed kernel.
type Session struct {
	*Engine
	Hello Hello
	Specs roofline.Specs
	cfg   SessionConfig

	cache     string // where the shared harness copy (hdir) is installed
	hdir      string
	entry     string
	env       []string
	profMu    sync.Mutex
	profilers map[int]platform.Profiler
}

// OpenSession starts the workers and binds them to a task.
func OpenSession(ctx context.Context, task *kerneldir.Task, c SessionConfig) (*Session, error) {
	if task == nil {
		return nil, errors.New("open session: no kernel dir")
	}
	cache := c.CacheDir
	if cache == "" {
		cache = harness.CacheDir()
	}
	hdir, err := harness.Install(cache)
	if err != nil {
		return nil, err
	}
	slots := c.Slots
	if len(slots) == 0 {
		slots = [][]string{nil}
	}
	env := []string{"TRITON_CACHE_DIR=" + filepath.Join(cache, "triton")}
	// torch.compile's baselines (built by the judges, never by a candidate's
	// runner) keep their compiled code, and on the CPU the C++ compiler's
	// precompiled headers, from run to run.
	if os.Getenv("TORCHINDUCTOR_CACHE_DIR") == "" {
		env = append(env, "TORCHINDUCTOR_CACHE_DIR="+filepath.Join(cache, "inductor"))
	}
	env = append(env, c.Env...)
	var opts []Options
	for _, s := range slots {
		// Each worker writes its own copy of the harness (HarnessDir "").
		opts = append(opts, Options{Python: c.Python, Device: c.Device,
			Env: append(append([]string(nil), env...), s...), Isolate: c.Isolate, Logger: c.Logger})
	}
	pool, err := NewPool(ctx, opts, c.Spare, c.Logger)
	if err != nil {
		return nil, err
	}
	s := &Session{Hello: pool.Hello(), cfg: c, cache: cache, hdir: hdir, entry: string(task.Entry), env: env, profilers: map[int]platform.Profiler{}}
	if c.Specs != nil {
		if s.Specs, err = c.Specs(s.Hello); err != nil {
			pool.Close()
			return nil, err
		}
	}
	eo := c.Engine
	if c.TritonIfImportable {
		eo.RequireTriton = s.Hello.Triton != nil
	}
	if eo.FlushBytes == 0 {
		l2 := s.Hello.Device.L2Bytes
		if l2 == 0 && s.Specs.L2MB > 0 {
			l2 = int64(s.Specs.L2MB * (1 << 20))
		}
		eo.FlushBytes = 2 * l2
	}
	seed := c.SecretSeed
	if seed == 0 {
		seed = SecretSeed()
	}
	if eo.Log == nil {
		eo.Log = c.Logger
	}
	s.Engine = NewEngine(pool, NewLoadRequest(task, seed), eo)
	return s, nil
}

// Reopen binds the session's warm workers to another task: every worker's
// copy of the current problem is freed and the next request loads the new
// one, with a new secret seed. It saves starting the workers and their CUDA
// contexts again when problems run one after another (a sweep). Nothing may
// run on the session meanwhile.
func (s *Session) Reopen(ctx context.Context, task *kerneldir.Task) error {
	if task == nil {
		return errors.New("reopen session: no kernel dir")
	}
	if err := s.Engine.releaseAll(ctx); err != nil {
		return fmt.Errorf("reopen session on %s: %w", task.Dir, err)
	}
	seed := s.cfg.SecretSeed
	if seed == 0 {
		seed = SecretSeed()
	}
	s.Engine.mu.Lock()
	s.Engine.req, s.Engine.info = NewLoadRequest(task, seed), nil
	// The derived limits follow the new problem, not the old one's times.
	s.Engine.loadTook, s.Engine.verifyTook, s.Engine.benchTook, s.Engine.benchSeen = 0, 0, 0, 0
	s.Engine.mu.Unlock()
	s.entry = string(task.Entry)
	s.closeProfilers()
	return nil
}

// SecretSeed draws a random seed for a run's hidden input draw.
func SecretSeed() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.LittleEndian.Uint64(b[:])>>34) + 1000
}

// PhysicalLimitError: a kernel measured faster than the roofline floor allows
// (verification check 8).
type PhysicalLimitError struct{ Err error }

func (e *PhysicalLimitError) Error() string { return "physical_limit: " + e.Err.Error() }
func (e *PhysicalLimitError) Unwrap() error { return e.Err }

// Fault: the time is faster than the device can be.
func (e *PhysicalLimitError) Fault() (*platform.Fault, bool) {
	return &platform.Fault{Check: "physical_limit", Reason: e.Err.Error()}, true
}

// Time times a target; a kernel faster than physically possible gives
// *PhysicalLimitError along with its timing.
func (s *Session) Time(ctx context.Context, t platform.Target) (platform.Timing, error) {
	tm, err := s.Engine.Time(ctx, t)
	if err != nil || t.Kind != platform.TargetKernel {
		return tm, err
	}
	return tm, s.checkPhysical(ctx, tm)
}

func (s *Session) checkPhysical(ctx context.Context, tm platform.Timing) error {
	if s.Specs.MemBWGBs == 0 || !tm.Representative {
		return nil
	}
	info, err := s.Info(ctx)
	if err != nil {
		return err
	}
	// Bytes only: the FLOP count is the reference's work, and a correct
	// kernel may do less (an algebraic simplification), so it bounds the
	// roofline report, not what is possible.
	if err := roofline.CheckPhysical(tm.MedianMS, info.BytesIn+info.BytesOut, 0, s.dtype(info), s.Specs); err != nil {
		return &PhysicalLimitError{Err: err}
	}
	return nil
}

// Accept is the acceptance gate: it verifies a candidate in a brand-new
// worker process with new seeds (public and secret), so nothing a candidate
// did to the warm workers can help it.
func (s *Session) Accept(ctx context.Context, c platform.Candidate) (platform.Verdict, error) {
	// The gate runs on one of the session's GPUs, held for the duration so
	// that nothing else runs there; when the worker's copy of the problem and
	// the gate's own may not fit together, the worker's is freed first (it
	// loads the problem again on its next request).
	l, err := s.Engine.pool.Acquire(ctx)
	if err != nil {
		return platform.Verdict{}, fmt.Errorf("acceptance gate: %w", err)
	}
	defer l.Release()
	released := s.gateNeedsRoom()
	if released {
		if err := s.Engine.release(ctx, l); err != nil {
			return platform.Verdict{}, fmt.Errorf("acceptance gate: free the worker's problem: %w", err)
		}
	}
	v, err := s.gate(ctx, l, c)
	if (err == nil && v.Failure == "oom") || isOOM(err) {
		// The candidate passed in the warm worker; out of memory in a fresh
		// process (or a load refused for want of memory) may be memory
		// another process was still giving back, a staged profile holds
		// (StageProfile), or the warm worker's copy of the problem and its
		// kept runners: those go first. It fails the gate only if it runs out
		// of memory a second time.
		s.Engine.logf("the acceptance gate ran out of device memory; trying once more", "candidate", c.ID, "err", err)
		s.unstage(-1)
		if !released {
			if rerr := s.Engine.release(ctx, l); rerr != nil {
				return platform.Verdict{}, fmt.Errorf("acceptance gate: free the worker's problem: %w", rerr)
			}
		}
		v, err = s.gate(ctx, l, c)
	}
	return v, err
}

// gate verifies c in a brand-new worker on the leased slot's GPU: the
// slot's warm spare when one is ready (a process that has served no request,
// started while the search ran), else one started now.
func (s *Session) gate(ctx context.Context, l *Lease, c platform.Candidate) (platform.Verdict, error) {
	pool := s.Engine.pool.TakeSpare(l)
	if pool == nil {
		var err error
		if pool, err = NewPool(ctx, []Options{l.slot.opts}, false, s.cfg.Logger); err != nil {
			return platform.Verdict{}, fmt.Errorf("acceptance gate: %w", err)
		}
	}
	defer pool.Close()
	req := s.Engine.req
	req.Seeds = make([]int64, gateDraws)
	for i := range req.Seeds {
		req.Seeds[i] = SecretSeed()
	}
	e := NewEngine(pool, req, s.Engine.opts)
	start := time.Now()
	c.CutoffMS = 0 // the gate verifies in full, whatever it is handed
	v, err := e.Verify(ctx, c)
	v.Duration = time.Since(start)
	return v, err
}

// Profile measures a candidate's hardware metrics. It holds the slot's
// worker for the duration, so no timing runs on that GPU while a profiler
// replays kernels there. Without a hardware profiler, the metrics are
// synthetic: the candidate's measured time against the bytes and flops
// counted from the problem's tensors.
func (s *Session) Profile(ctx context.Context, c platform.Candidate) (roofline.Metrics, error) {
	if s.cfg.Profiler == nil {
		return s.syntheticProfile(ctx, c, "no hardware profiler on this platform")
	}
	l, err := s.Engine.pool.Acquire(ctx)
	if err != nil {
		return roofline.Metrics{}, err
	}
	defer l.Release()
	p, err := s.profiler(l.slot)
	if err != nil {
		return roofline.Metrics{}, err
	}
	s.unstage(l.slot.index) // a profile staged on another GPU is not this one's
	// The profiled process imports the shared copy of the harness: undo
	// whatever a candidate may have changed there since.
	if _, err := harness.Install(s.cache); err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	if err := s.Engine.req.Repin(); err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	// The profiled process builds the problem's inputs itself: when the two
	// copies may not fit on the device together, free the worker's first
	// (it loads the problem again on its next request).
	if s.profileNeedsRoom() {
		if err := s.Engine.release(ctx, l); err != nil {
			return roofline.Metrics{}, fmt.Errorf("profile %s: free the worker's problem: %w", c.ID, err)
		}
	}
	limit := s.Engine.ProfileLimit()
	pctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	m, err := p.Profile(pctx, c)
	if err != nil && ctx.Err() == nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		return m, fmt.Errorf("profile %s: stopped after %s (timeouts.profile; unset, the limit follows the problem's "+
			"first verification): %w", c.ID, limit.Round(time.Millisecond), err)
	}
	return m, err
}

// profiler is the slot's profiler, built on first use.
func (s *Session) profiler(sl *slot) (platform.Profiler, error) {
	s.profMu.Lock()
	defer s.profMu.Unlock()
	if p, ok := s.profilers[sl.index]; ok {
		return p, nil
	}
	s.Engine.mu.Lock()
	load := s.Engine.req
	s.Engine.mu.Unlock()
	p, err := s.cfg.Profiler(ProfilerSetup{HarnessDir: s.hdir, CacheDir: s.cache, Load: load, Entry: s.entry,
		SlotEnv: sl.opts.Env, Env: s.env, Specs: s.Specs, Info: s.Info, Logger: s.cfg.Logger})
	if err != nil {
		return nil, err
	}
	s.profilers[sl.index] = p
	return p, nil
}

// prestarter is a profiler that can start its next profile's process
// before it is needed (profiler/ncu).
type prestarter interface{ Prestart() }

// PrepareProfile tells the session that a profile will follow: profilers
// that can start their process early do so on every GPU now, and the
// process's start-up overlaps whatever runs before the profile (the
// input's verification and baselines). It returns at once.
func (s *Session) PrepareProfile() {
	if s.cfg.Profiler == nil {
		return
	}
	for _, sl := range s.Engine.pool.slots {
		p, err := s.profiler(sl)
		if err != nil {
			continue // Profile reports it
		}
		if ps, ok := p.(prestarter); ok {
			ps.Prestart()
		}
	}
}

// LastProfile tells the profilers that the next profile is the run's last:
// none starts a process ahead after it (one would only be ended unused).
func (s *Session) LastProfile() {
	s.profMu.Lock()
	defer s.profMu.Unlock()
	for _, p := range s.profilers {
		if l, ok := p.(interface{ Last() }); ok {
			l.Last()
		}
	}
}

// closeProfilers ends what the profilers keep running and forgets them.
func (s *Session) closeProfilers() {
	s.profMu.Lock()
	defer s.profMu.Unlock()
	for _, p := range s.profilers {
		if c, ok := p.(io.Closer); ok {
			_ = c.Close()
		}
	}
	s.profilers = map[int]platform.Profiler{}
}

// Close ends the profilers' processes and the workers.
func (s *Session) Close() error {
	s.closeProfilers()
	return s.Engine.Close()
}

// profileFootprint is how many times one draw's inputs plus outputs the
// worker and a second process on its GPU may hold together: the worker keeps
// every draw with its reference and a candidate's outputs; the acceptance
// gate's process builds all of its own draws and references. A profiled
// process builds one draw and no references, but ncu may keep copies of what
// the kernel writes to restore it between replay passes, so it shares the
// gate's bound.
const profileFootprint = 12

// gateDraws is how many draws (new seeds) the acceptance gate verifies on.
const gateDraws = 3

// contextBytes is what a process's device context is counted at when
// deciding what fits beside the warm worker.
const contextBytes = 512 << 20

// gateNeedsRoom reports whether the warm worker's copy of the problem should
// be freed before the acceptance gate's fresh worker loads its own: whether,
// beside what the warm worker holds between operations (its stored draws and
// kept runners, from its memory plan), the gate's worker would plan fewer than
// all its draws (it would then wait for memory that is not coming back, or be
// refused). The gate's plan is the warm worker's, grown by the draws it stores
// more (each a draw's inputs and outputs, and the output its runner keeps),
// within the plan's 90% of what is free. Without a memory plan it falls back
// to profileNeedsRoom's bound.
func (s *Session) gateNeedsRoom() bool {
	g, ok := s.gateRoom()
	if !ok {
		return s.profileNeedsRoom()
	}
	// Contexts: the warm worker, its runners, the gate's worker and runner.
	return g.need > planFraction*(g.total-g.warm-float64(g.keptRunners+3)*contextBytes)
}

// gateMemory is what the acceptance gate's worker needs and what the warm
// worker holds between operations, from the warm worker's memory plan.
type gateMemory struct {
	need, warm, total float64
	keptRunners       int
}

// gateRoom reads gateMemory; false where the worker reported no memory plan
// (or the device's memory is unknown).
func (s *Session) gateRoom() (gateMemory, bool) {
	s.Engine.mu.Lock()
	info := s.Engine.info
	s.Engine.mu.Unlock()
	total := float64(s.Hello.Device.TotalMemory)
	if info == nil || info.Memory == nil || info.Memory.Draws <= 0 || total <= 0 {
		return gateMemory{}, false
	}
	m, x, y := info.Memory, info.BytesIn, info.BytesOut
	return gateMemory{
		need:        m.NeedBytes + float64(gateDraws-m.Draws)*(x+2*y),
		warm:        float64(m.Draws)*(x+y) + float64(m.KeptRunners)*(float64(m.BufferSets)*x+2*y),
		total:       total,
		keptRunners: m.KeptRunners,
	}, true
}

// planFraction is the share of the free device memory a worker plans its
// draws with (the harness's memplan.PLAN_FRACTION).
const planFraction = 0.9

// profileNeedsRoom reports whether the worker's copy of the problem should
// be freed before a profiler builds its own on the same device (and, without
// a memory plan, before the acceptance gate: gateNeedsRoom). Unknown sizes
// free it, to be safe.
func (s *Session) profileNeedsRoom() bool {
	s.Engine.mu.Lock()
	info := s.Engine.info
	s.Engine.mu.Unlock()
	total := s.Hello.Device.TotalMemory
	if info == nil || total <= 0 {
		return true
	}
	return profileFootprint*(info.BytesIn+info.BytesOut) > 0.9*float64(total)
}

func (s *Session) syntheticProfile(ctx context.Context, c platform.Candidate, reason string) (roofline.Metrics, error) {
	tm, err := s.Engine.Time(ctx, platform.Target{Kind: platform.TargetKernel, Candidate: c})
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return roofline.Metrics{}, err
	}
	w := synthetic.Work{}
	for _, t := range info.Inputs {
		w.Inputs = append(w.Inputs, synthetic.Tensor{Shape: t.Shape, DType: t.DType})
	}
	for _, t := range info.Outputs {
		w.Outputs = append(w.Outputs, synthetic.Tensor{Shape: t.Shape, DType: t.DType})
	}
	if info.FLOPs != nil {
		w.FLOPs = *info.FLOPs
	}
	m, err := synthetic.Metrics(w, tm.MedianMS, reason)
	if err != nil {
		return roofline.Metrics{}, fmt.Errorf("profile %s: %w", c.ID, err)
	}
	return m, nil
}

// Interface guards
var (
	_ platform.Session         = (*Session)(nil)
	_ platform.ProfilePreparer = (*Session)(nil)
	_ platform.ProfileStager   = (*Session)(nil)
	_ platform.ProfileEnder    = (*Session)(nil)
	_ platform.Comparer        = (*Session)(nil)
	_ platform.Accepter        = (*Session)(nil)
	_ platform.ProblemInformer = (*Session)(nil)
)

// About says where the session's candidates run: the device and isolation
// its worker reported at start, and the specs resolved for that device.
func (s *Session) About() platform.SessionInfo {
	info := platform.SessionInfo{Device: s.Hello.Device.Name, Isolation: s.Hello.Isolation(), Specs: s.Specs,
		Runtime: true, Torch: s.Hello.Torch}
	if s.Hello.Triton != nil {
		info.Triton = *s.Hello.Triton
	}
	return info
}

// Floor returns the roofline floor of one call of the problem on the
// session's GPU (0 when the GPU has no specs, e.g. the cpu platform).
func (s *Session) Floor(ctx context.Context) (float64, error) {
	if s.Specs.MemBWGBs == 0 {
		return 0, nil
	}
	info, err := s.Info(ctx)
	if err != nil {
		return 0, err
	}
	flops := 0.0
	if info.FLOPs != nil {
		flops = *info.FLOPs
	}
	return roofline.Floor(info.BytesIn+info.BytesOut, flops, s.dtype(info), s.Specs), nil
}

// dtype is the dtype that selects the peak rate: the kernel dir's, else the
// first input's; fp32 work with TF32 allowed runs at the TF32 rate.
func (s *Session) dtype(info ProblemInfo) string {
	d := s.Engine.req.DType
	if d == "" && len(info.Inputs) > 0 {
		d = info.Inputs[0].DType
	}
	if info.TF32 == "allow" || info.TF32 == "" && s.Engine.req.TF32 == "allow" {
		if c := roofline.CanonicalDType(d); c == "fp32" {
			return "tf32"
		}
	}
	return d
}
