package store

import (
	"context"
	"testing"

	"github.com/kagent-kernels/kagent/roofline"
)

// TestProfiledEventMessage: the event of a profiled candidate gives its SOL
// and class when the roofline placed it, and says why not otherwise (no
// "0% SOL, unknown" on a platform without peak figures).
func TestProfiledEventMessage(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	run := must[Run](t)(s.CreateRun(ctx, Run{ID: "r", KernelDir: "/k", Problem: "k", Strategy: "tune", Platform: "cpu"}))
	check(t, s.StartRound(ctx, run.ID, 0))
	for id, tc := range map[string]struct {
		r    *roofline.Result
		want string
	}{
		"placed":   {rooflineOf(), "profiled: 81.2% SOL, memory"},
		"unplaced": {&roofline.Result{Class: roofline.ClassUnknown, Unplaced: roofline.UnplacedNoPeaks}, "profiled: roofline n/a (the platform has no peak figures)"},
	} {
		must[Candidate](t)(s.AddCandidate(ctx, Candidate{RunID: run.ID, ID: id, Source: kernelSource(id)}))
		must[Candidate](t)(s.UpdateCandidate(ctx, run.ID, id, Update{Status: StatusVerified, Verdict: passVerdict()}))
		must[Candidate](t)(s.UpdateCandidate(ctx, run.ID, id, Update{Status: StatusTimed, Timing: timingOf(id, 1)}))
		must[Candidate](t)(s.UpdateCandidate(ctx, run.ID, id, Update{Status: StatusProfiled, Metrics: metricsOf(1), Roofline: tc.r}))
		evs := must[[]Event](t)(s.Events(ctx, run.ID, 0, 0))
		if got := evs[len(evs)-1].Message; got != tc.want {
			t.Errorf("%s: event %q, want %q", id, got, tc.want)
		}
	}
}
