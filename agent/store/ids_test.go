package store

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"
)

func TestCandidateIDsRoundTripAndOrder(t *testing.T) {
	for _, tc := range []struct {
		id                   string
		round, slot, attempt int
		ok                   bool
	}{
		{"r1c2", 1, 2, 0, true},
		{"r12c3f2", 12, 3, 2, true},
		{InputID, 0, 0, 0, false},
		{"r1c2x", 0, 0, 0, false},
		{"r01c2", 0, 0, 0, false},
	} {
		r, s, a, ok := ParseCandidateID(tc.id)
		if ok != tc.ok || ok && (r != tc.round || s != tc.slot || a != tc.attempt) {
			t.Errorf("%s: %d %d %d %v", tc.id, r, s, a, ok)
		}
		if ok && CandidateID(r, s, a) != tc.id {
			t.Errorf("%s does not round-trip", tc.id)
		}
	}
	ids := []string{"r2c1", "r10c1", "r2c1f1", InputID, "r2c10", "r2c2"}
	slices.SortFunc(ids, CompareIDs)
	if want := []string{InputID, "r2c1", "r2c1f1", "r2c2", "r2c10", "r10c1"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("sorted %v, want %v", ids, want)
	}
}

func TestInterruptReason(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := InterruptReason(ctx); got != "stopped by a signal or the caller" {
		t.Errorf("plain cancel: %q", got)
	}
	ctx, cancelCause := context.WithCancelCause(context.Background())
	cancelCause(errors.New("budget\nspent"))
	if got := InterruptReason(ctx); got != "budget spent" {
		t.Errorf("cause: %q", got)
	}
}
