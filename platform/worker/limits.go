package worker

import "time"

// Derived limits (EngineOptions.VerifyTimeout and BenchTimeout left 0): a
// kernel's step may take LimitFactor times what the same step took for the
// problem's first kernels (a compile, the user test, the problem's
// transfers), plus LimitFloor (room for a candidate that autotunes a few
// configurations, which the first kernel may not) and the problem's load
// time, at most LimitCap.
// Until the first verification passes (the input kernel's) and the first
// kernel timing is done, the cap applies; the baselines (the problem's own
// code, torch.compile's compile included) and every step on the cpu
// platform always get the cap.
const (
	LimitFloor  = 30 * time.Second
	LimitFactor = 4
	LimitCap    = 5 * time.Minute
)

// Limits returns the verification and timing limits in force.
func (e *Engine) Limits() (verify, bench time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	derive := func(set, took time.Duration) time.Duration {
		if set > 0 {
			return set
		}
		// Not on the cpu platform (Representative false): there a step's
		// time moves with the machine's load, and a hung candidate costs
		// no accelerator time.
		if took <= 0 || !e.opts.Representative {
			return LimitCap
		}
		return min(LimitCap, LimitFloor+e.loadTook+LimitFactor*took)
	}
	return derive(e.opts.VerifyTimeout, e.verifyTook), derive(e.opts.BenchTimeout, e.benchTook)
}

// ProfileFloor is the room a hardware profile gets beyond what the problem's
// first verification took (EngineOptions.ProfileTimeout left 0): the
// profiler's own start where no process was started ahead (ncu and the
// imports under it, 5-10 s on an H200) and its replay passes.
const ProfileFloor = 60 * time.Second

// ProfileLimit is the limit of one hardware profile: ProfileTimeout where
// set; else, once the first kernel's verification passed on a GPU,
// ProfileFloor plus the load time plus LimitFactor times that verification
// (the profiled program loads the problem, compiles the kernel and calls
// it), at most LimitCap; else the cap. A candidate that hangs only under
// the profiler then costs about a minute on a small problem, not five.
func (e *Engine) ProfileLimit() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.opts.ProfileTimeout > 0 {
		return e.opts.ProfileTimeout
	}
	if e.verifyTook <= 0 || !e.opts.Representative {
		return LimitCap
	}
	return min(LimitCap, ProfileFloor+e.loadTook+LimitFactor*e.verifyTook)
}

// note records a step's duration for the derived limits.
func (e *Engine) note(what *time.Duration, took time.Duration, first bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if first && *what > 0 {
		return
	}
	*what = max(*what, took)
}

// noteBench records a kernel timing's duration for the derived limits: the
// longest of the first two (the input kernel's, and the first candidate's).
func (e *Engine) noteBench(took time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.benchSeen < 2 {
		e.benchSeen++
		e.benchTook = max(e.benchTook, took)
	}
}
