package worker

import (
	"context"

	"github.com/kagent-kernels/kagent/harness"
	"github.com/kagent-kernels/kagent/platform"
)

// A run's last profile (the best's, under profile_candidates final) comes
// right after its acceptance gate, which verifies in a fresh process and
// times nothing. StageProfile lets the profiled process load the problem and
// warm the candidate up while the gate runs, so that the profile that follows
// is only its profiled call.

// Device memory, in draws' inputs plus outputs, of the processes a staged
// profile runs beside (see profileFootprint for the worker and one more).
const (
	// gateFootprint is the acceptance gate's process at its peak: its three
	// draws with their references (3), verification's input copies and the
	// draws' outputs (2.5, PROTOCOL.md), the runner's outputs, kept until
	// all draws ran (1.5), and the buffers shared with it (1).
	gateFootprint = 8
	// stagedFootprint is a staged profile's process while the gate runs:
	// one draw's inputs and two warm-up outputs at most (1.5), rounded up.
	// What ncu keeps for its replay passes comes only with the profiled
	// call, after the gate.
	stagedFootprint = 2
)

// stager is a profiler that can stage a candidate's profile (profiler/ncu).
type stager interface {
	Stage(c platform.Candidate) bool
	StageLight(c platform.Candidate) bool
	Unstage()
}

// How much of a profile is staged beside the acceptance gate.
type stageMode int

const (
	stageNone stageMode = iota
	// stageLight: only the profiled process's device context.
	stageLight
	// stageFull: its inputs, the candidate's import and warm-up too.
	stageFull
)

// StageProfile stages c's profile on one GPU: its profiler's process builds
// the inputs, imports c and warms it up now, and c's next Profile only runs
// the profiled call. The warm-up runs on the GPU while the caller goes on,
// so the caller must time nothing there until that profile (the agent
// stages the best before its acceptance gate). Nothing is staged where the
// profiler cannot stage. Where the staged process might leave the gate
// short of memory, the worker's copy of the problem is freed first, or,
// where even that would not do, the stage is light: the process only makes
// its device context before the profile (stageRoom). It reports whether
// c's profile was staged; whatever was staged for another candidate is
// ended either way.
func (s *Session) StageProfile(ctx context.Context, c platform.Candidate) bool {
	if s.cfg.Profiler == nil {
		return false
	}
	mode, freeWorker := s.stageRoom()
	if mode == stageNone {
		s.unstage(-1)
		s.Engine.logf("the profile is not staged beside the acceptance gate: the device may not hold both", "candidate", c.ID)
		return false
	}
	l, err := s.Engine.pool.Acquire(ctx)
	if err != nil {
		s.unstage(-1)
		return false
	}
	defer l.Release()
	s.unstage(l.slot.index)
	p, err := s.profiler(l.slot)
	if err != nil {
		return false
	}
	st, ok := p.(stager)
	if !ok {
		return false
	}
	// As Profile does before its profiled process reads them.
	_, err = harness.Install(s.cache)
	if err == nil {
		err = s.Engine.req.Repin()
	}
	if err == nil && freeWorker {
		err = s.Engine.release(ctx, l)
	}
	if err == nil && mode == stageLight {
		s.Engine.logf("the profile is staged light: its inputs and warm-up would not fit beside the acceptance gate", "candidate", c.ID)
		if st.StageLight(c) {
			return true
		}
	} else if err == nil && st.Stage(c) {
		return true
	}
	st.Unstage()
	return false
}

// UnstageProfile ends every profile staged on the session's GPUs.
func (s *Session) UnstageProfile() { s.unstage(-1) }

// stageRoom says how much of a profile may be staged beside the acceptance
// gate, and whether the worker's copy of the problem is to be freed first.
// With the warm worker's memory plan, the gate's worker must still plan all
// its draws (gateRoom) with the staged process taken from what is free:
// staged in full, at its peak (its context, one draw's inputs and two
// outputs), beside the warm worker's draws and kept runners or, freed,
// beside nothing of the problem; else light (its context alone) on the
// same terms. Without a plan it counts footprints in draws. Unknown sizes
// stage nothing.
func (s *Session) stageRoom() (mode stageMode, freeWorker bool) {
	s.Engine.mu.Lock()
	info := s.Engine.info
	s.Engine.mu.Unlock()
	total := s.Hello.Device.TotalMemory
	if info == nil || total <= 0 {
		return stageNone, false
	}
	if g, ok := s.gateRoom(); ok {
		// Contexts: the gate's worker and runner, and the warm worker,
		// which stays when its copy is freed.
		contexts := 3 * float64(contextBytes)
		kept := g.warm + float64(g.keptRunners)*contextBytes
		fits := func(staged float64) (bool, bool) {
			switch {
			case g.need <= planFraction*(g.total-staged-contexts-kept):
				return true, false
			case g.need <= planFraction*(g.total-staged-contexts):
				return true, true
			}
			return false, false
		}
		if ok, free := fits(info.BytesIn + 2*info.BytesOut + contextBytes); ok {
			return stageFull, free
		}
		if ok, free := fits(contextBytes); ok {
			return stageLight, free
		}
		return stageNone, false
	}
	draw, room := info.BytesIn+info.BytesOut, 0.9*float64(total)
	switch {
	case (profileFootprint+stagedFootprint)*draw <= room:
		return stageFull, false
	case (gateFootprint+stagedFootprint)*draw <= room:
		return stageFull, true
	case gateFootprint*draw+contextBytes <= room:
		return stageLight, true
	}
	return stageNone, false
}

// unstage ends the profiles staged on every slot but keep (-1: all).
func (s *Session) unstage(keep int) {
	s.profMu.Lock()
	defer s.profMu.Unlock()
	for i, p := range s.profilers {
		if st, ok := p.(stager); ok && i != keep {
			st.Unstage()
		}
	}
}
