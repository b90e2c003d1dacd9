package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestOpenReadOnly: a read-only store reads what a writer committed, refuses
// every write, and does not create a missing file.
func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	run, err := w.CreateRun(ctx, Run{KernelDir: "/k", Strategy: "greedy", Platform: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, err := ro.GetRun(ctx, run.ID); err != nil {
		t.Errorf("GetRun: %v", err)
	}
	if _, err := ro.AddEvent(ctx, Event{RunID: run.ID, Round: NoRound, Kind: "x"}); err == nil {
		t.Error("AddEvent on a read-only store succeeded")
	}
	// A write of the writer shows up in the reader.
	if _, err := w.AddEvent(ctx, Event{RunID: run.ID, Round: NoRound, Kind: "later"}); err != nil {
		t.Fatal(err)
	}
	evs, err := ro.Events(ctx, run.ID, 0, 0)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].Kind != "later" {
		t.Errorf("Events: %v %v, want the writer's last event", evs, err)
	}
	if _, err := OpenReadOnly(ctx, filepath.Join(t.TempDir(), "missing.db")); err == nil {
		t.Error("OpenReadOnly of a missing file succeeded")
	}
	if _, err := OpenReadOnly(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("OpenReadOnly(\"\"): %v, want ErrInvalid", err)
	}
}
