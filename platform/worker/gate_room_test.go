package worker

import (
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

// TestGateNeedsRoom: the warm worker's copy of the problem is freed before
// the acceptance gate exactly where the gate's worker could not plan its
// three draws beside it (the harness's memplan, whose numbers the plans below
// follow: for X = Y and one input set, 3 draws need 19 X and the scratch).
// A 4 GiB-per-tensor problem on an H200 is one profileNeedsRoom's bound lets
// through, though its gate would plan fewer draws after waiting for memory.
func TestGateNeedsRoom(t *testing.T) {
	const gib = 1 << 30
	const scratch = 192 << 20
	h200 := int64(143771) << 20
	session := func(x float64, plan *platform.MemoryPlan) *Session {
		return &Session{Engine: &Engine{info: &ProblemInfo{BytesIn: x, BytesOut: x, Memory: plan}},
			Hello: Hello{Device: Device{TotalMemory: h200}}}
	}
	for _, c := range []struct {
		name          string
		x             float64
		plan          *platform.MemoryPlan
		gate, profile bool
	}{
		{"2 GiB a tensor: 3 sets, 4 kept runners", 2 * gib,
			&platform.MemoryPlan{Draws: 3, NeedBytes: 3*4*gib + (4+3+2+3+2+3)*2*gib + scratch, BufferSets: 3, KeptRunners: 4}, false, false},
		{"4 GiB a tensor: the gate beside the warm worker would not store 3 draws", 4 * gib,
			&platform.MemoryPlan{Draws: 3, NeedBytes: 19*4*gib + scratch, BufferSets: 1, KeptRunners: 3}, true, false},
		{"6 GiB a tensor", 6 * gib,
			&platform.MemoryPlan{Draws: 3, NeedBytes: 19*6*gib + scratch, BufferSets: 1, KeptRunners: 2}, true, true},
		{"no plan: profileNeedsRoom's bound", 4 * gib, nil, false, false},
	} {
		s := session(c.x, c.plan)
		if got := s.gateNeedsRoom(); got != c.gate {
			t.Errorf("%s: gateNeedsRoom %v, want %v", c.name, got, c.gate)
		}
		if got := s.profileNeedsRoom(); got != c.profile {
			t.Errorf("%s: profileNeedsRoom %v, want %v", c.name, got, c.profile)
		}
	}
	// A warm worker that stored 2 draws holds a draw less, and the gate's
	// plan is one draw more than its own: 76.2 GiB within 90% of 85.4.
	s := session(4*gib, &platform.MemoryPlan{Draws: 2, NeedBytes: 16*4*gib + scratch, BufferSets: 1, KeptRunners: 3})
	if s.gateNeedsRoom() {
		t.Error("a warm worker of 2 draws: the gate's 3 fit beside it")
	}
	// With four kept runners (12 GiB more) they do not.
	s = session(4*gib, &platform.MemoryPlan{Draws: 2, NeedBytes: 16*4*gib + scratch, BufferSets: 1, KeptRunners: 4})
	if !s.gateNeedsRoom() {
		t.Error("a warm worker of 2 draws and 4 kept runners: the gate's 3 do not fit beside it")
	}
}

// TestStageRoomByPlan: beside the gate's 3 draws on an H200, a staged
// profile fits with the worker's copy kept (2 GiB a tensor), only with it
// freed (4 GiB), or only light, with it freed (6 GiB: the gate alone plans
// 114 GiB).
func TestStageRoomByPlan(t *testing.T) {
	const gib = 1 << 30
	const scratch = 192 << 20
	h200 := int64(143771) << 20
	for _, c := range []struct {
		name       string
		x          float64
		plan       *platform.MemoryPlan
		mode       stageMode
		freeWorker bool
	}{
		{"2 GiB a tensor", 2 * gib,
			&platform.MemoryPlan{Draws: 3, NeedBytes: 3*4*gib + 17*2*gib + scratch, BufferSets: 3, KeptRunners: 4}, stageFull, false},
		{"4 GiB a tensor", 4 * gib,
			&platform.MemoryPlan{Draws: 3, NeedBytes: 19*4*gib + scratch, BufferSets: 1, KeptRunners: 3}, stageFull, true},
		{"6 GiB a tensor", 6 * gib,
			&platform.MemoryPlan{Draws: 3, NeedBytes: 19*6*gib + scratch, BufferSets: 1, KeptRunners: 2}, stageLight, true},
		// A warm worker of 2 draws: the gate plans one more.
		{"6 GiB a tensor, 2 draws stored", 6 * gib,
			&platform.MemoryPlan{Draws: 2, NeedBytes: 16*6*gib + scratch, BufferSets: 1, KeptRunners: 2}, stageLight, true},
		// 7 GiB: the gate's 3 draws alone are over 90% of the device.
		{"7 GiB a tensor", 7 * gib,
			&platform.MemoryPlan{Draws: 2, NeedBytes: 16*7*gib + scratch, BufferSets: 1, KeptRunners: 2}, stageNone, false},
	} {
		s := &Session{Engine: &Engine{info: &ProblemInfo{BytesIn: c.x, BytesOut: c.x, Memory: c.plan}},
			Hello: Hello{Device: Device{TotalMemory: h200}}}
		mode, free := s.stageRoom()
		if mode != c.mode || free != c.freeWorker {
			t.Errorf("%s: stageRoom = %v, %v; want %v, %v", c.name, mode, free, c.mode, c.freeWorker)
		}
	}
}
