package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
)

// TestTwoWorkersSpreadCandidates runs the scheduling path of a multi-GPU
// machine on the CPU: one session with two worker slots verifies the same
// candidates concurrently. Both slots must serve work, and every verdict
// must equal the one a single-slot session gives.
func TestTwoWorkersSpreadCandidates(t *testing.T) {
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch) is not set")
	}
	var entries []suiteEntry
	b, err := os.ReadFile("testdata/suite.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &entries); err != nil {
		t.Fatal(err)
	}
	var cands []platform.Candidate
	problem := ""
	for _, e := range entries {
		if e.Platform != "cpu" || e.Problem != "problems/add_relu" || len(e.Options.Shapes) > 0 || e.Options.DType != "" || e.Options.AllowInplace {
			continue
		}
		if e.Expect != "pass" && e.Expect[:5] != "fail:" {
			continue
		}
		problem = e.Problem
		p, _ := filepath.Abs(filepath.Join("testdata", e.Candidate))
		cands = append(cands, platform.Candidate{ID: e.Name, Path: p})
	}
	if len(cands) < 4 {
		t.Fatalf("only %d add_relu candidates in the suite", len(cands))
	}
	abs, _ := filepath.Abs(filepath.Join("testdata", problem))
	task := &kerneldir.Task{Dir: abs, ProblemPath: filepath.Join(abs, "problem.py")}
	open := func(slots int) *Session {
		cfg := SessionConfig{Python: py, Device: "cpu", Isolate: true, CacheDir: t.TempDir(), SecretSeed: 4242,
			Env:    []string{"TRITON_INTERPRET=1", "CUDA_VISIBLE_DEVICES="},
			Engine: EngineOptions{VerifyTimeout: 60 * time.Second, WarmupMS: 2, RepMS: 5}}
		for i := 0; i < slots; i++ {
			cfg.Slots = append(cfg.Slots, []string{"KAGENT_SLOT=" + string(rune('0'+i))})
		}
		s, err := OpenSession(context.Background(), task, cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	verify := func(s *Session) map[string]string {
		out := map[string]string{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range cands {
			wg.Add(1)
			go func() {
				defer wg.Done()
				v, err := s.Verify(context.Background(), c)
				if err != nil {
					t.Errorf("verify %s: %v", c.ID, err)
					return
				}
				mu.Lock()
				// The check that rejects a candidate is stable; its reason
				// may name draws whose order depends on allocator addresses.
				out[c.ID] = fmt.Sprintf("passed=%v failure=%s", v.Passed, v.Failure)
				mu.Unlock()
			}()
		}
		wg.Wait()
		return out
	}
	one, two := open(1), open(2)
	want, got := verify(one), verify(two)
	for id, w := range want {
		if got[id] != w {
			t.Errorf("%s: two workers gave %q, one gave %q", id, got[id], w)
		}
	}
	a, b2 := two.Engine.pool.Served(0), two.Engine.pool.Served(1)
	if a == 0 || b2 == 0 {
		t.Errorf("candidates not spread: slot 0 served %d, slot 1 served %d", a, b2)
	}
	t.Logf("%d candidates: slot 0 served %d requests, slot 1 served %d; verdicts identical to one slot", len(cands), a, b2)
}
