package ncu

// A profile's process started ahead of its candidate (Config.Ahead), and the
// stages: a candidate handed to that process before its profile.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
	"github.com/kagent-kernels/kagent/platform"
)

// ahead is a profile's process started before its candidate was known.
type ahead struct {
	run *Pending
	dir string // its wrapper, job file and log; removed when it ends
	job string
	// staged is the candidate whose job it was handed by Stage ("" until
	// then), and goFile the file whose creation starts its profiled call.
	staged, goFile string
}

// Prestart starts the next profile's process now (Config.Ahead), unless one
// is waiting already; from then on every profile starts the next one when
// it ends. It returns at once; a failure to start is logged and the next
// profile starts its own process.
func (p *Profiler) Prestart() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = true
	p.startNext()
}

// Last says that the next profile is the last this profiler runs (the
// best's at a run's end): nothing is started ahead after it. A process
// already waiting stays for that profile.
func (p *Profiler) Last() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.asked = false
}

// startNext starts a process ahead if asked and none waits; p.mu is held.
func (p *Profiler) startNext() {
	if !p.asked || !p.cfg.Ahead || p.closed || p.noAhead != "" || p.ahead != nil && !p.ahead.run.Exited() {
		return
	}
	p.dropAhead()
	a, err := p.startAhead()
	if err != nil {
		p.logger().Warn("ncu: could not start the next profile's process ahead", "err", err)
		return
	}
	p.ahead = a
}

func (p *Profiler) startAhead() (*ahead, error) {
	dir, err := os.MkdirTemp(p.cfg.WorkDir, "kagent-ncu-ahead-")
	if err != nil {
		return nil, err
	}
	w := p.Wrapper()
	w.JobFile = filepath.Join(dir, "job.json")
	script, err := w.Render()
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "ncu_wrapper.py"), []byte(script), 0o644)
	}
	var run *Pending
	if err == nil {
		// The candidate is not known yet: no kernel filter for ncu.
		run, err = p.runner.Start(Run{GPU: p.cfg.GPU, Dir: dir, Command: Command{
			Metrics: p.cfg.Metrics, Mark: p.cfg.Mark, MaxLaunches: p.cfg.MaxLaunches,
			Program: []string{p.cfg.Python, filepath.Join(dir, "ncu_wrapper.py")},
		}})
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return &ahead{run: run, dir: dir, job: w.JobFile}, nil
}

// takeAhead hands the waiting process to the profile of c; nil when there
// is none, it has ended, or it was staged for another candidate (then it is
// ended: its warm-up was for nothing). One that ended for another reason
// than waiting in vain (IdleSeconds) turns starting ahead off.
func (p *Profiler) takeAhead(c platform.Candidate) *ahead {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ahead != nil && p.ahead.run.Exited() {
		if out := p.ahead.run.Output(); !strings.Contains(out, idleExitMessage) {
			p.noAhead = "the process started ahead ended before its job: " + firstLine(failureDetail(out))
			p.logger().Warn("ncu: no longer starting profiles ahead", "reason", p.noAhead)
		}
		p.dropAhead()
	}
	if p.ahead != nil && p.ahead.staged != "" && p.ahead.staged != stageKey(c, false) && p.ahead.staged != stageKey(c, true) {
		p.dropAhead()
	}
	a := p.ahead
	p.ahead = nil
	return a
}

// stageKey names a candidate's staged job: its ID and source, and whether
// the stage is light.
func stageKey(c platform.Candidate, light bool) string {
	sum := sha256.Sum256([]byte(c.Source))
	key := c.ID + "@" + hex.EncodeToString(sum[:])
	if light {
		key += "/light"
	}
	return key
}

// Stage hands c's profile to the process started ahead now (starting one
// when none waits): it builds the inputs, imports c and warms it up (Triton
// compiles there) at once, then waits for Profile(c) to run the profiled
// call. That warm-up runs on the GPU outside the profile lock, so Stage is
// for a moment when nothing on this GPU is timed until c's profile (a run's
// end, alongside its acceptance gate, which only verifies). It returns at
// once, false when nothing was staged (starting ahead is off or failed). A
// later profile of another candidate ends the staged process unused; Unstage
// ends it now. The candidate runs in that process and can create the go
// file itself: that only runs its own profiled call early, beside its own
// gate, and a process that ended before its go is profiled again fresh.
// Its metrics rank nothing.
func (p *Profiler) Stage(c platform.Candidate) bool { return p.stage(c, false) }

// StageLight stages c's profile as Stage does, but the process only makes
// its device context (about half a GiB) until Profile(c): for a problem
// whose inputs and warm-up outputs would not fit beside the acceptance
// gate. Nothing of c runs before Profile(c).
func (p *Profiler) StageLight(c platform.Candidate) bool { return p.stage(c, true) }

func (p *Profiler) stage(c platform.Candidate, light bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.cfg.Ahead || p.closed || p.noAhead != "" {
		return false
	}
	key := stageKey(c, light)
	if p.ahead != nil && p.ahead.staged == key && !p.ahead.run.Exited() {
		return true
	}
	if p.ahead != nil && (p.ahead.staged != "" || p.ahead.run.Exited()) {
		p.dropAhead()
	}
	if p.ahead == nil {
		a, err := p.startAhead()
		if err != nil {
			p.logger().Warn("ncu: could not start a process to stage the profile in", "candidate", c.ID, "err", err)
			return false
		}
		p.ahead = a
	}
	a := p.ahead
	err := p.submitJob(a, c.Path, filepath.Join(a.dir, "go"), light)
	if err != nil {
		p.logger().Warn("ncu: could not stage the profile", "candidate", c.ID, "err", err)
		p.dropAhead()
		return false
	}
	a.staged, a.goFile = key, filepath.Join(a.dir, "go")
	return true
}

// Unstage ends a process staged for a profile, if any (its memory is
// needed elsewhere).
func (p *Profiler) Unstage() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ahead != nil && p.ahead.staged != "" {
		p.dropAhead()
	}
}

// dropAhead ends the waiting process; p.mu is held.
func (p *Profiler) dropAhead() {
	if p.ahead != nil {
		p.ahead.run.Abandon()
		os.RemoveAll(p.ahead.dir)
		p.ahead = nil
	}
}

// profileAhead hands the candidate to a process started ahead (or tells
// the one staged for it to go on) and waits for its report.
func (p *Profiler) profileAhead(ctx context.Context, a *ahead, path string) (*Report, error) {
	defer os.RemoveAll(a.dir)
	return a.run.Finish(ctx, func() error {
		if a.staged != "" {
			return atomicfile.Write(a.goFile, nil, 0o644)
		}
		return p.submitJob(a, path, "", false)
	})
}

// submitJob writes a's job file for the candidate at path (copied into a's
// folder where the profile is sandboxed); goFile set stages it, light
// stages only the device context.
func (p *Profiler) submitJob(a *ahead, path, goFile string, light bool) error {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	path, err := p.visibleCandidate(path, a.dir)
	if err != nil {
		return err
	}
	data, err := json.Marshal(job{CandidatePath: path, Entry: p.cfg.Entry, GoFile: goFile, Light: light})
	if err != nil {
		return err
	}
	return atomicfile.Write(a.job, data, 0o644)
}
