package store

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

// TestResumeState builds a run stopped in the middle of round 1 with a
// candidate in every state and checks what ResumeState asks the loop to do.
func TestResumeState(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	newRun(t, s, "r")
	up := func(id string, us ...Update) {
		t.Helper()
		for _, u := range us {
			must[Candidate](t)(s.UpdateCandidate(ctx, "r", id, u))
		}
	}
	verified := Update{Status: StatusVerified, Verdict: passVerdict()}
	timed := func(ms float64) Update { return Update{Status: StatusTimed, Timing: timingOf("", ms)} }
	profiled := Update{Status: StatusProfiled, Metrics: metricsOf(1)}
	rejected := Update{Status: StatusRejected, Verdict: failVerdict("allclose", "mismatch")}

	up("input", verified, timed(5), profiled)
	check(t, s.SetBaseline(ctx, "r", platform.TargetEager, *timingOf("eager", 6)))
	check(t, s.FinishRound(ctx, "r", 0, []byte(`{"beam":["input"]}`)))
	check(t, s.StartRound(ctx, "r", 1))
	for _, c := range []Candidate{
		{ID: "r1c0"}, {ID: "r1c1"}, {ID: "r1c2"}, {ID: "r1c3"}, {ID: "r1c4"}, {ID: "r1c5"}, {ID: "r1c6"},
		{ID: "r1c5.1", RefineOf: "r1c5", RefineAttempt: 1},
	} {
		c.RunID, c.Round, c.ParentID, c.Source = "r", 1, "input", kernelSource(c.ID)
		must[Candidate](t)(s.AddCandidate(ctx, c))
	}
	up("r1c0", verified, timed(4), profiled)
	up("r1c1", verified, timed(3))
	up("r1c2", verified)
	up("r1c4", rejected)
	up("r1c5", rejected)
	up("r1c6", Update{Status: StatusFailed, Error: "worker timeout"})
	must[int64](t)(s.RecordLLMCall(ctx, LLMCall{RunID: "r", Round: 1, Purpose: "rewrite", PromptTokens: 10, CostUSD: 0.5}))
	// ... and here the process is killed: the run is still "running".

	st := must[*ResumeState](t)(s.ResumeState(ctx, "r"))
	got := map[string]any{
		"status":    st.Run.Status,
		"last":      st.LastFinished,
		"open":      st.Open.Index,
		"next":      st.NextRound,
		"rounds":    len(st.Rounds),
		"state":     string(st.Rounds[0].State),
		"slots":     ids(st.OpenCandidates),
		"verify":    ids(st.Verify),
		"time":      ids(st.Time),
		"profile":   ids(st.Profile),
		"unrefined": ids(st.Unrefined),
		"counts":    st.Counts,
		"baselines": st.MissingBaselines,
		"best":      st.Best.ID,
		"cost":      st.Usage.CostUSD,
	}
	want := map[string]any{
		"status":    RunRunning,
		"last":      0,
		"open":      1,
		"next":      2,
		"rounds":    2,
		"state":     `{"beam":["input"]}`,
		"slots":     []string{"r1c0", "r1c1", "r1c2", "r1c3", "r1c4", "r1c5", "r1c6", "r1c5.1"},
		"verify":    []string{"r1c3", "r1c5.1"},
		"time":      []string{"r1c2"},
		"profile":   []string{"r1c1"},
		"unrefined": []string{"r1c4"},
		"counts": map[Status]int{StatusProposed: 2, StatusVerified: 1, StatusTimed: 1, StatusProfiled: 2,
			StatusRejected: 2, StatusFailed: 1},
		"baselines": []platform.TargetKind{platform.TargetCompile},
		"best":      "r1c1", // fastest measured: 3 ms
		"cost":      0.5,
	}
	for k := range want {
		if !reflect.DeepEqual(got[k], want[k]) {
			t.Errorf("%s = %v, want %v", k, got[k], want[k])
		}
	}

	// The store holds the loop to the rules.
	if err := s.StartRound(ctx, "r", 2); !errors.Is(err, ErrTransition) {
		t.Errorf("start a new round while round 1 is open: %v", err)
	}
	if _, err := s.UpdateCandidate(ctx, "r", "r1c1", timed(2.5)); !errors.Is(err, ErrTransition) {
		t.Errorf("re-time a timed candidate: %v", err)
	}
	if err := s.SetBaseline(ctx, "r", platform.TargetEager, *timingOf("eager", 1)); !errors.Is(err, ErrTransition) {
		t.Errorf("re-time a baseline: %v", err)
	}

	// Following the rules finishes the round.
	check(t, s.ReopenRun(ctx, "r"))
	up("r1c3", verified, timed(3.5), profiled)
	up("r1c5.1", rejected)
	up("r1c2", timed(2))
	up("r1c1", profiled)
	check(t, s.SetBaseline(ctx, "r", platform.TargetCompile, *timingOf("compile", 4)))
	check(t, s.FinishRound(ctx, "r", 1, nil))
	st = must[*ResumeState](t)(s.ResumeState(ctx, "r"))
	if st.Open != nil || st.LastFinished != 1 || st.NextRound != 2 || len(st.Verify)+len(st.Time)+len(st.Profile) != 0 ||
		len(st.Unrefined) != 0 || st.MissingBaselines != nil || st.Best.ID != "r1c2" || st.Run.Resumes != 1 {
		t.Errorf("after resume: %+v", st)
	}
	check(t, s.StartRound(ctx, "r", 2))
}

func TestResumeStateOfEmptyRun(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	must[Run](t)(s.CreateRun(ctx, Run{ID: "r", KernelDir: "/k"}))
	st := must[*ResumeState](t)(s.ResumeState(ctx, "r"))
	if st.Open != nil || st.LastFinished != -1 || st.NextRound != 0 || st.Best != nil || len(st.MissingBaselines) != 2 {
		t.Errorf("state = %+v", st)
	}
}
