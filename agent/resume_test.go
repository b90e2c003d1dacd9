package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
)

// killChildEnv carries the child's setup when TestKillAndResume re-executes
// the test binary.
const killChildEnv = "KAGENT_AGENT_KILL_CHILD"

type killSpec struct {
	Dir    string `json:"dir"`
	RunDir string `json:"run_dir"`
}

func killConfig() configs.Config {
	cfg := testConfig(configs.StrategyBeam)
	cfg.StrategyConfig.NumTopKernels, cfg.StrategyConfig.NumBottlenecks = 1, 4
	cfg.NumWorkers, cfg.MaxRounds = 4, 1
	return cfg
}

func killScript(t testing.TB, f *fakeLLM, fastDelay time.Duration) {
	fast := pyReply(candidateSource(t, "fast.py"))
	fast.Delay = fastDelay
	script(t, f.srv, []string{diagnosis("BROKEN", "CHEAT", "SLOW", "FAST")},
		map[string][]llmtest.Reply{
			"BROKEN": {pyReply(candidateSource(t, "broken.py"))},
			"CHEAT":  {pyReply(candidateSource(t, "cheat.py"))},
			"SLOW":   {pyReply(candidateSource(t, "slow.py"))},
			"FAST":   {fast},
		},
		map[string][]llmtest.Reply{
			"BROKEN": {pyReply(candidateSource(t, "banned.py"))},
			"CHEAT":  {pyReply(candidateSource(t, "cheat.py"))},
		})
}

// TestKillChild is the child half of TestKillAndResume: it runs a beam
// round whose FAST rewrite never arrives, until the parent kills it.
func TestKillChild(t *testing.T) {
	raw := os.Getenv(killChildEnv)
	if raw == "" {
		t.Skip("runs only as the child of TestKillAndResume")
	}
	var spec killSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, spec.Dir)
	e.runDir = spec.RunDir
	cfg := killConfig()
	f := newFakeLLM(t, cfg)
	killScript(t, f, 10*time.Minute)
	_, err := Run(context.Background(), e.input(cfg, f.client))
	t.Fatalf("the child run returned (%v); it should have been killed", err)
}

// TestKillAndResume kills (SIGKILL) a run in the middle of round 1, with
// three slots settled and one waiting for its rewrite, and resumes it: no
// measured candidate is lost or timed again, no saved LLM reply is asked
// again, and the resumed run finishes with the faster kernel.
func TestKillAndResume(t *testing.T) {
	python(t)
	dir := kernelDir(t)
	runDir := filepath.Join(t.TempDir(), "run")
	spec, _ := json.Marshal(killSpec{Dir: dir, RunDir: runDir})
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), killChildEnv+"="+string(spec))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	ctx := context.Background()
	dbPath := filepath.Join(dir, ".kagent", "history.db")
	var runID string
	deadline := time.Now().Add(3 * time.Minute)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("the child never reached the kill point:\n%s", out.String())
		}
		time.Sleep(200 * time.Millisecond)
		if _, err := os.Stat(dbPath); err != nil {
			continue
		}
		runID = killPoint(t, dbPath)
		if runID != "" {
			break
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	killed = true
	t.Logf("child output:\n%s", out.String())

	e := newEnv(t, dir)
	before := mustCandidates(t, e.store, runID)
	rs, err := e.store.ResumeState(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	if rs.Run.Status != store.RunRunning || rs.Open == nil || rs.Open.Index != 1 {
		t.Fatalf("after the kill: status %s, open round %+v; want running with round 1 open", rs.Run.Status, rs.Open)
	}
	cfg := killConfig()
	f := newFakeLLM(t, cfg)
	killScript(t, f, 0)
	e.runDir = "" // the run dir the store recorded
	res, err := Resume(ctx, e.input(cfg, f.client), runID)
	if err != nil {
		t.Fatalf("resume: %v", err)
	}
	if res.RunDir != runDir {
		t.Errorf("resumed in %s, want the recorded %s", res.RunDir, runDir)
	}
	after := mustCandidates(t, e.store, runID)
	for id, b := range before {
		a, ok := after[id]
		if !ok {
			t.Errorf("candidate %s lost", id)
			continue
		}
		if b.Timing != nil && !reflect.DeepEqual(a.Timing, b.Timing) {
			t.Errorf("candidate %s was timed again: %+v -> %+v", id, b.Timing, a.Timing)
		}
	}
	evs, err := e.store.Events(ctx, runID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	timed := map[string]int{}
	for _, ev := range evs {
		if ev.Kind == "candidate.timed" {
			timed[ev.CandidateID]++
		}
	}
	for id, n := range timed {
		if n != 1 {
			t.Errorf("candidate %s timed %d times", id, n)
		}
	}
	fast, _ := byDirection(after, 1, "FAST")
	if !res.Improved || res.Best.ID != fast.ID {
		t.Errorf("best %s (improved %v), want the FAST rewrite %s", res.Best.ID, res.Improved, fast.ID)
	}
	if n := f.countPrompts("# Task: diagnose"); n != 0 {
		t.Errorf("the resumed run diagnosed again (%d calls); the saved reply should serve", n)
	}
	if n := f.countPrompts("# Task: make this Triton kernel faster"); n != 1 {
		t.Errorf("the resumed run asked %d rewrites, want 1 (FAST, which never arrived)", n)
	}
	if n := f.countPrompts("# Task: fix a Triton kernel"); n != 0 {
		t.Errorf("the resumed run asked %d refinements, want 0", n)
	}
	detail, _ := e.store.GetRun(ctx, runID)
	if detail.Resumes != 1 || detail.Status != store.RunFinished {
		t.Errorf("run after resume: %s, %d resumes", detail.Status, detail.Resumes)
	}
}

// killPoint returns the run id once round 1 holds the three settled slots
// (SLOW profiled, the refinements of BROKEN and CHEAT rejected).
func killPoint(t *testing.T, dbPath string) string {
	ctx := context.Background()
	st, err := store.Open(ctx, dbPath)
	if err != nil {
		return ""
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.RunFilter{})
	if err != nil || len(runs) != 1 {
		return ""
	}
	cs, err := st.Candidates(ctx, runs[0].ID, store.CandidateFilter{Rounds: []int{1}})
	if err != nil {
		return ""
	}
	settled := 0
	for _, c := range cs {
		switch {
		case c.Status == store.StatusProfiled:
			settled++
		case c.Status == store.StatusRejected && c.RefineAttempt == 1:
			settled++
		}
	}
	if settled < 3 {
		return ""
	}
	return runs[0].ID
}
