package worker

import (
	"context"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// stageProfiler records the stages asked of it, whether the session's
// worker still held the problem at each, and its unstages.
type stageProfiler struct {
	s        **Session
	staged   []string // candidate IDs, "/light" after a light stage's
	held     []bool
	unstaged int
}

func (p *stageProfiler) Profile(context.Context, platform.Candidate) (roofline.Metrics, error) {
	return roofline.Metrics{Source: "test", TimeMS: 1}, nil
}

func (p *stageProfiler) Stage(c platform.Candidate) bool {
	e := (*p.s).Engine
	e.mu.Lock()
	p.held = append(p.held, len(e.loaded) > 0)
	e.mu.Unlock()
	p.staged = append(p.staged, c.ID)
	return true
}

func (p *stageProfiler) StageLight(c platform.Candidate) bool {
	c.ID += "/light"
	return p.Stage(c)
}

func (p *stageProfiler) Unstage() { p.unstaged++ }

// TestStageProfile: a profile is staged as is where the worker's copy of the
// problem, the gate's and the staged one fit on the device; after freeing the
// worker's copy where only the gate's and the staged one fit; light (its
// context alone) where only that fits beside the gate; not at all on a
// smaller device. A profile on one GPU ends what was staged on another.
func TestStageProfile(t *testing.T) {
	var s *Session
	prof := &stageProfiler{s: &s}
	s, cand := addReluSession(t, EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5}, prof)
	c := platform.Candidate{ID: "ok", Path: cand}
	ctx := context.Background()
	if v, err := s.Verify(ctx, c); err != nil || !v.Passed {
		t.Fatalf("verify: %+v %v", v, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Memory == nil {
		t.Fatal("the worker reported no memory plan")
	}
	// The device's memory at which the staged process and the gate fit
	// beside the worker's copy (keep), and beside nothing of the problem
	// (free); light: the staged process's context alone, beside nothing
	// of the problem. stageRoom's bounds, from the worker's own plan.
	s.Hello.Device.TotalMemory = 1 << 40
	g, _ := s.gateRoom()
	staged := info.BytesIn + 2*info.BytesOut + contextBytes
	light := g.need/planFraction + contextBytes + 3*contextBytes
	free := g.need/planFraction + staged + 3*contextBytes
	keep := free + g.warm + float64(g.keptRunners)*contextBytes
	for _, tc := range []struct {
		name   string
		total  float64
		staged string
		freed  bool
	}{
		{"roomy", keep * 1.01, "ok", false},
		{"tight", (free + keep) / 2, "ok", true},
		{"light", (light + free) / 2, "ok/light", true},
		{"too small", light * 0.99, "", false},
	} {
		if v, err := s.Verify(ctx, c); err != nil || !v.Passed { // (re)loads the problem
			t.Fatalf("%s: verify: %+v %v", tc.name, v, err)
		}
		s.Hello.Device.TotalMemory = int64(tc.total)
		before, unstaged := len(prof.staged), prof.unstaged
		got := s.StageProfile(ctx, c)
		if got != (tc.staged != "") || len(prof.staged) > before != got {
			t.Fatalf("%s: StageProfile = %v with stages %v, want %q", tc.name, got, prof.staged, tc.staged)
		}
		if got && prof.staged[len(prof.staged)-1] != tc.staged {
			t.Errorf("%s: staged %q, want %q", tc.name, prof.staged[len(prof.staged)-1], tc.staged)
		}
		// What was staged before (another candidate's, one that failed its
		// gate) does not run beside the next gate, staged or not.
		if !got && prof.unstaged == unstaged {
			t.Errorf("%s: nothing staged, and the earlier stage was left running", tc.name)
		}
		if got && prof.held[len(prof.held)-1] == tc.freed {
			t.Errorf("%s: the worker held the problem when staged: %v, want %v", tc.name, !tc.freed, !tc.freed)
		}
	}
	unstaged := prof.unstaged
	s.UnstageProfile()
	if prof.unstaged != unstaged+1 {
		t.Errorf("UnstageProfile did not end the stage")
	}
	other := &stageProfiler{s: &s}
	s.profMu.Lock()
	s.profilers[1] = other
	s.profMu.Unlock()
	unstaged = prof.unstaged
	if _, err := s.Profile(ctx, c); err != nil {
		t.Fatal(err)
	}
	if other.unstaged != 1 || prof.unstaged != unstaged {
		t.Errorf("unstaged: other GPU %d, this one %d more: want 1 and 0", other.unstaged, prof.unstaged-unstaged)
	}
}
