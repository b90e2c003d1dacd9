package worker

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// emptyTempDir points TMPDIR at a fresh folder and returns a check that it
// is empty again.
func emptyTempDir(t *testing.T) func() {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir)
	return func() {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		if len(names) > 0 {
			t.Errorf("left in TMPDIR: %s", strings.Join(names, ", "))
		}
	}
}

// TestNoTempLeftBehind: a worker's private folder, with whatever the
// worker wrote to its temporary dir (folders without permissions too), is
// gone after Close, after a crash and replacement, after a failed start,
// and after closing a pool whose spare is still starting.
func TestNoTempLeftBehind(t *testing.T) {
	t.Run("close", func(t *testing.T) {
		check := emptyTempDir(t)
		w, err := Start(context.Background(), fakeOptions(t))
		if err != nil {
			t.Fatal(err)
		}
		var out struct{ Dir string }
		if err := w.Call(context.Background(), "litter", nil, &out, hangGuard); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.Dir, filepath.Join(w.workDir, tmpDir)+string(filepath.Separator)) {
			t.Errorf("the worker's temporary files went to %s, not its own folder %s", out.Dir, w.workDir)
		}
		w.Close()
		check()
	})
	t.Run("crash and replace", func(t *testing.T) {
		check := emptyTempDir(t)
		p, err := NewPool(context.Background(), []Options{fakeOptions(t)}, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := p.Acquire(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		_ = l.Call(context.Background(), "litter", nil, nil, hangGuard)
		_ = l.Call(context.Background(), "segv", nil, nil, hangGuard)
		l.Release()
		if l, err = p.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
		l.Release()
		p.Close()
		check()
	})
	for _, mode := range []string{"die", "silent", "garbage"} {
		t.Run("failed start "+mode, func(t *testing.T) {
			check := emptyTempDir(t)
			o := fakeOptions(t, "FAKE_START="+mode)
			o.StartTimeout = time.Second
			if _, err := Start(context.Background(), o); err == nil {
				t.Fatal("Start succeeded")
			}
			check()
		})
	}
	t.Run("cancelled start", func(t *testing.T) {
		check := emptyTempDir(t)
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(200*time.Millisecond, cancel)
		if _, err := Start(ctx, fakeOptions(t, "FAKE_START=silent")); err == nil {
			t.Fatal("Start succeeded")
		}
		check()
	})
	t.Run("spare still starting", func(t *testing.T) {
		check := emptyTempDir(t)
		mark := filepath.Join(t.TempDir(), "started")
		p, err := NewPool(context.Background(), []Options{fakeOptions(t, "FAKE_START=first", "FAKE_MARK="+mark)}, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The spare has been launched (its folder exists) and never gets ready.
		deadline := time.Now().Add(hangGuard)
		for {
			entries, _ := os.ReadDir(os.Getenv("TMPDIR"))
			if len(entries) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the spare never started: %d entries in TMPDIR", len(entries))
			}
			time.Sleep(20 * time.Millisecond)
		}
		closed := make(chan struct{})
		go func() { p.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(hangGuard):
			t.Fatal("Close waits for a spare that never gets ready")
		}
		check()
	})
}
