package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// crashEnv, when set, makes the test binary a crash child: it runs
// crashScript against the store at that path, printing "ok N" after each
// committed step, until its parent kills it.
const crashEnv = "KAGENT_STORE_CRASH_DB"

// crashInTxEnv, when set to N, makes the child stop inside step N's write
// transaction, just before it commits, print "intx N" and wait to be killed.
const crashInTxEnv = "KAGENT_STORE_CRASH_IN_TX"

func TestMain(m *testing.M) {
	if path := os.Getenv(crashEnv); path != "" {
		os.Exit(crashChild(path))
	}
	os.Exit(m.Run())
}

func crashChild(path string) int {
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var stopAt, current int
	fmt.Sscan(os.Getenv(crashInTxEnv), &stopAt)
	s.beforeCommit = func() {
		if current == stopAt {
			fmt.Printf("intx %d\n", current)
			time.Sleep(time.Minute)
		}
	}
	for i, st := range crashScript() {
		current = i + 1
		if err := st.do(ctx, s); err != nil {
			fmt.Fprintf(os.Stderr, "step %d (%s): %v\n", i+1, st.name, err)
			return 2
		}
		fmt.Printf("ok %d\n", i+1)
	}
	fmt.Println("done")
	return 0
}

// model is what the store should hold after a prefix of crashScript.
type model struct {
	Status     RunStatus
	Rounds     []bool // finished
	Candidates []mcand
	Eager      bool
	Compile    bool
	Best       string
	Calls      int
	Events     int
}

type mcand struct {
	ID, Parent, RefineOf string
	Round, Attempt       int
	Source               string
	Status               Status
	Verdict              *platform.Verdict
	Timing               *platform.Timing
	Metrics              bool
}

func (m *model) cand(id string) *mcand {
	for i := range m.Candidates {
		if m.Candidates[i].ID == id {
			return &m.Candidates[i]
		}
	}
	panic("no candidate " + id)
}

type step struct {
	name  string
	do    func(context.Context, *Store) error
	apply func(*model)
}

const crashRun = "crash"

// bigSource is a kernel padded to about 24 KiB, so that writes take long
// enough for a kill to land inside one now and then.
func bigSource(id string) string {
	var b strings.Builder
	b.WriteString(kernelSource(id))
	for i := range 1200 {
		fmt.Fprintf(&b, "PAD_%s_%d = %d  # padding line\n", strings.ReplaceAll(id, ".", "_"), i, i)
	}
	return b.String()
}

// crashScript is a deterministic run: round 0 with the input, then three
// rounds of six candidates each, some rejected and refined, one failing.
func crashScript() []step {
	var steps []step
	add := func(name string, do func(context.Context, *Store) error, apply func(*model)) {
		steps = append(steps, step{name: name, do: do, apply: apply})
	}
	addCand := func(c Candidate) {
		c.RunID, c.Source = crashRun, bigSource(c.ID)
		add("add "+c.ID, func(ctx context.Context, s *Store) error { _, err := s.AddCandidate(ctx, c); return err },
			func(m *model) {
				m.Candidates = append(m.Candidates, mcand{ID: c.ID, Parent: c.ParentID, RefineOf: c.RefineOf, Round: c.Round,
					Attempt: c.RefineAttempt, Source: c.Source, Status: StatusProposed})
				m.Events++
			})
	}
	update := func(id string, u Update) {
		add(string(u.Status)+" "+id, func(ctx context.Context, s *Store) error {
			_, err := s.UpdateCandidate(ctx, crashRun, id, u)
			return err
		}, func(m *model) {
			c := m.cand(id)
			c.Status = u.Status
			if u.Verdict != nil {
				c.Verdict = u.Verdict
			}
			if u.Timing != nil {
				c.Timing = u.Timing
			}
			c.Metrics = c.Metrics || u.Metrics != nil
			m.Events++
		})
	}
	startRound := func(r int) {
		add(fmt.Sprint("start round ", r), func(ctx context.Context, s *Store) error { return s.StartRound(ctx, crashRun, r) },
			func(m *model) { m.Rounds = append(m.Rounds, false); m.Events++ })
	}
	finishRound := func(r int) {
		add(fmt.Sprint("finish round ", r), func(ctx context.Context, s *Store) error {
			return s.FinishRound(ctx, crashRun, r, []byte(fmt.Sprintf(`{"round":%d}`, r)))
		}, func(m *model) { m.Rounds[r] = true; m.Events++ })
	}
	setBest := func(id string) {
		add("best "+id, func(ctx context.Context, s *Store) error { return s.SetBest(ctx, crashRun, id) },
			func(m *model) { m.Best = id; m.Events++ })
	}
	verified := Update{Status: StatusVerified, Verdict: passVerdict()}
	timed := func(id string, ms float64) Update { return Update{Status: StatusTimed, Timing: timingOf(id, ms)} }
	profiled := Update{Status: StatusProfiled, Metrics: metricsOf(1), Roofline: rooflineOf()}

	add("create run", func(ctx context.Context, s *Store) error {
		_, err := s.CreateRun(ctx, Run{ID: crashRun, KernelDir: "/k/crash", Strategy: "beam_search"})
		return err
	}, func(m *model) { m.Status = RunRunning; m.Events++ })
	startRound(0)
	addCand(Candidate{ID: "input"})
	update("input", verified)
	update("input", timed("input", 5))
	for _, kind := range []platform.TargetKind{platform.TargetEager, platform.TargetCompile} {
		add("baseline "+string(kind), func(ctx context.Context, s *Store) error {
			return s.SetBaseline(ctx, crashRun, kind, *timingOf(string(kind), 6))
		}, func(m *model) {
			m.Eager = m.Eager || kind == platform.TargetEager
			m.Compile = m.Compile || kind == platform.TargetCompile
			m.Events++
		})
	}
	update("input", profiled)
	setBest("input")
	finishRound(0)

	best, bestMS := "input", 5.0
	for r := 1; r <= 3; r++ {
		startRound(r)
		var cands []string
		for i := range 6 {
			id := fmt.Sprintf("r%dc%d", r, i)
			cands = append(cands, id)
			add("llm call "+id, func(ctx context.Context, s *Store) error {
				_, err := s.RecordLLMCall(ctx, LLMCall{RunID: crashRun, Round: r, CandidateID: id, Purpose: "rewrite",
					PromptTokens: 1000 + i, CompletionTokens: 500, CostUSD: 0.01})
				return err
			}, func(m *model) { m.Calls++ })
			addCand(Candidate{ID: id, Round: r, ParentID: best, Bottleneck: i%2 + 1})
		}
		var timedIDs []string
		for i, id := range cands {
			if i%3 == 2 {
				update(id, Update{Status: StatusRejected, Verdict: failVerdict("allclose", "mismatch on draw "+id)})
				fix := id + ".1"
				addCand(Candidate{ID: fix, Round: r, ParentID: best, RefineOf: id, RefineAttempt: 1})
				update(fix, verified)
				timedIDs = append(timedIDs, fix)
				continue
			}
			update(id, verified)
			timedIDs = append(timedIDs, id)
		}
		for i, id := range timedIDs {
			ms := 5 - float64(r)*0.5 - float64(i)*0.1
			update(id, timed(id, ms))
			if ms < bestMS {
				best, bestMS = id, ms
			}
		}
		for i, id := range timedIDs {
			if i == 1 {
				update(id, Update{Status: StatusFailed, Error: "profiler timeout"})
				continue
			}
			update(id, profiled)
		}
		setBest(best)
		finishRound(r)
	}
	add("finish run", func(ctx context.Context, s *Store) error {
		return s.FinishRun(ctx, crashRun, RunFinished, "max rounds")
	}, func(m *model) { m.Status = RunFinished; m.Events++ })
	return steps
}

func modelAt(steps []step, k int) *model {
	m := &model{}
	for _, st := range steps[:k] {
		st.apply(m)
	}
	return m
}

// snapshot reads the store into a model.
func snapshot(t *testing.T, s *Store) *model {
	t.Helper()
	ctx := context.Background()
	d, err := s.GetRun(ctx, crashRun)
	if errors.Is(err, ErrNotFound) {
		return &model{}
	}
	check(t, err)
	m := &model{Status: d.Status, Eager: d.Baselines.Eager != nil, Compile: d.Baselines.Compile != nil, Best: d.BestID}
	for _, r := range d.Rounds {
		m.Rounds = append(m.Rounds, r.Finished())
	}
	for _, c := range d.Candidates {
		if c.SourceHash != SourceHash(c.Source) {
			t.Errorf("%s: stored hash does not match its source", c.ID)
		}
		m.Candidates = append(m.Candidates, mcand{ID: c.ID, Parent: c.ParentID, RefineOf: c.RefineOf, Round: c.Round,
			Attempt: c.RefineAttempt, Source: c.Source, Status: c.Status, Verdict: c.Verdict, Timing: c.Timing,
			Metrics: c.Metrics != nil})
	}
	m.Calls = len(must[[]LLMCall](t)(s.LLMCalls(ctx, crashRun)))
	m.Events = len(must[[]Event](t)(s.Events(ctx, crashRun, 0, 0)))
	return m
}

// TestCrashResume kills a writing process with SIGKILL at several points,
// then checks that the file holds exactly the steps committed before the
// kill (each step whole or absent), that ResumeState says exactly what is
// left, and that resuming by its rules completes the run without timing
// anything twice.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	steps := crashScript()
	type kill struct {
		at   int  // kill once step at is reported committed, or
		inTx bool // kill inside step at's transaction, before its commit
	}
	var kills []kill
	for _, at := range []int{2, 4, 11, 20, 27, 33, 46, 61, 85, len(steps) - 2} {
		kills = append(kills, kill{at: at})
	}
	// In-transaction kills: adding the input (a large row), adding a round-1
	// candidate (row and event), timing one, finishing a round, the run.
	for _, at := range []int{3, 13, 34, 47, len(steps)} {
		kills = append(kills, kill{at: at, inTx: true})
	}
	for _, k := range kills {
		killAt := k.at
		name := fmt.Sprint("after_", killAt)
		if k.inTx {
			name = fmt.Sprint("inside_", killAt)
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "history.db")
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), crashEnv+"="+path)
			if k.inTx {
				cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%d", crashInTxEnv, killAt))
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			check(t, err)
			check(t, cmd.Start())
			reported := 0
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if k.inTx && sc.Text() == fmt.Sprint("intx ", killAt) {
					check(t, cmd.Process.Signal(syscall.SIGKILL))
					break
				}
				if n, err := fmt.Sscanf(sc.Text(), "ok %d", &reported); n == 1 && err == nil && reported >= killAt && !k.inTx {
					// Some kills wait a little, to land inside the next step.
					time.Sleep(time.Duration(killAt%4) * 700 * time.Microsecond)
					check(t, cmd.Process.Signal(syscall.SIGKILL))
					break
				}
			}
			err = cmd.Wait()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				if err != nil || reported != len(steps) {
					t.Fatalf("child: %v after step %d\n%s", err, reported, stderr.String())
				}
			}

			s, err := Open(context.Background(), path)
			check(t, err)
			defer s.Close()
			got := snapshot(t, s)
			committed := -1
			for k := reported; k <= len(steps); k++ {
				if reflect.DeepEqual(got, modelAt(steps, k)) {
					committed = k
					break
				}
			}
			if k.inTx && committed != killAt-1 {
				t.Fatalf("killed inside step %d before its commit, but %d steps are in the file", killAt, committed)
			}
			if committed < 0 {
				t.Fatalf("the file matches no prefix of the script from step %d on\n got %+v\nwant %+v",
					reported, got, modelAt(steps, reported))
			}
			t.Logf("killed after %d steps reported, %d committed (next: %s)", reported, committed,
				func() string {
					if committed < len(steps) {
						return steps[committed].name
					}
					return "none"
				}())
			want := modelAt(steps, committed)
			checkResumeState(t, s, want)
			resume(t, s, want)
		})
	}
}

// checkResumeState compares ResumeState with what the model says is left.
func checkResumeState(t *testing.T, s *Store, m *model) {
	t.Helper()
	st, err := s.ResumeState(context.Background(), crashRun)
	if m.Status == "" {
		if !errors.Is(err, ErrNotFound) {
			t.Errorf("no run yet: err = %v", err)
		}
		return
	}
	check(t, err)
	open, last := -1, -1
	for i, finished := range m.Rounds {
		if finished {
			last = i
		} else {
			open = i
		}
	}
	refined := map[string]bool{}
	for _, c := range m.Candidates {
		if c.RefineOf != "" {
			refined[c.RefineOf] = true
		}
	}
	var verify, timeIDs, profile, unrefined []string
	counts := map[Status]int{}
	for _, c := range m.Candidates {
		counts[c.Status]++
		switch {
		case c.Status == StatusProposed:
			verify = append(verify, c.ID)
		case c.Status == StatusVerified:
			timeIDs = append(timeIDs, c.ID)
		case c.Status == StatusTimed && c.Round == open:
			profile = append(profile, c.ID)
		case c.Status == StatusRejected && c.Round == open && !refined[c.ID]:
			unrefined = append(unrefined, c.ID)
		}
	}
	gotOpen := -1
	if st.Open != nil {
		gotOpen = st.Open.Index
	}
	nonNil := func(v []string) []string {
		if v == nil {
			return []string{}
		}
		return v
	}
	type view struct {
		Open, Last, Next                 int
		Verify, Time, Profile, Unrefined []string
		Counts                           map[Status]int
		MissingEager, MissingCompile     bool
		Calls                            int
		Status                           RunStatus
	}
	gotView := view{gotOpen, st.LastFinished, st.NextRound, ids(st.Verify), ids(st.Time), ids(st.Profile),
		ids(st.Unrefined), st.Counts, st.Run.Baselines.Eager == nil, st.Run.Baselines.Compile == nil,
		st.Usage.Calls, st.Run.Status}
	wantView := view{open, last, len(m.Rounds), nonNil(verify), nonNil(timeIDs), nonNil(profile), nonNil(unrefined),
		counts, !m.Eager, !m.Compile, m.Calls, m.Status}
	if !reflect.DeepEqual(gotView, wantView) {
		t.Errorf("resume state:\n got %+v\nwant %+v", gotView, wantView)
	}
	if open < 0 && len(verify)+len(timeIDs) > 0 {
		t.Errorf("unsettled candidates outside an open round: %v %v", verify, timeIDs)
	}
}

// resume follows the package's resume rules to finish the open round, then
// checks that every timing that existed before is unchanged and that the
// store refuses to time any measured candidate again.
func resume(t *testing.T, s *Store, m *model) {
	t.Helper()
	ctx := context.Background()
	if m.Status == "" {
		return
	}
	if m.Status == RunFinished {
		if err := s.ReopenRun(ctx, crashRun); !errors.Is(err, ErrTransition) {
			t.Errorf("reopen a finished run: %v", err)
		}
		return
	}
	check(t, s.ReopenRun(ctx, crashRun))
	st := must[*ResumeState](t)(s.ResumeState(ctx, crashRun))
	before := map[string]*platform.Timing{}
	for _, c := range m.Candidates {
		if c.Timing != nil {
			before[c.ID] = c.Timing
		}
	}
	resumed := func(id string) *platform.Timing {
		tm := timingOf(id, 9)
		tm.Method = "resumed"
		return tm
	}
	for _, c := range st.Verify {
		must[Candidate](t)(s.UpdateCandidate(ctx, crashRun, c.ID, Update{Status: StatusVerified, Verdict: passVerdict()}))
		must[Candidate](t)(s.UpdateCandidate(ctx, crashRun, c.ID, Update{Status: StatusTimed, Timing: resumed(c.ID)}))
	}
	for _, c := range st.Time {
		must[Candidate](t)(s.UpdateCandidate(ctx, crashRun, c.ID, Update{Status: StatusTimed, Timing: resumed(c.ID)}))
	}
	for _, c := range st.Profile {
		must[Candidate](t)(s.UpdateCandidate(ctx, crashRun, c.ID, Update{Status: StatusProfiled, Metrics: metricsOf(1)}))
	}
	for _, kind := range st.MissingBaselines {
		check(t, s.SetBaseline(ctx, crashRun, kind, *timingOf(string(kind), 6)))
	}
	if st.Open != nil {
		check(t, s.FinishRound(ctx, crashRun, st.Open.Index, nil))
	}

	for _, c := range must[*RunDetail](t)(s.GetRun(ctx, crashRun)).Candidates {
		if old, ok := before[c.ID]; ok {
			if !reflect.DeepEqual(c.Timing, old) {
				t.Errorf("%s: timing changed on resume: %+v", c.ID, c.Timing)
			}
		} else if c.Timing != nil && c.Timing.Method != "resumed" {
			t.Errorf("%s: unexpected timing %+v", c.ID, c.Timing)
		}
		if c.Status == StatusProposed || c.Status == StatusVerified {
			t.Errorf("%s left %s", c.ID, c.Status)
		}
	}
	// No measured candidate can be timed again, even by a confused loop.
	for id := range before {
		if _, err := s.UpdateCandidate(ctx, crashRun, id, Update{Status: StatusTimed, Timing: resumed(id)}); !errors.Is(err, ErrTransition) {
			t.Errorf("%s timed again: %v", id, err)
		}
	}
	check(t, s.FinishRun(ctx, crashRun, RunFinished, "resumed to the end"))
}
