package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/internal/relpath"
)

// Runner runs one problem of a sweep to its result. The sweep calls it from
// several goroutines at once (one per slot), so implementations must be safe
// for concurrent use. It returns the context's error when cancelled (the
// problem is then resumed by the next sweep); any other error is recorded as
// a result with status error. The sweep fills the result's identity
// (ID, Name, File, Level), Shard, FinishedAt, the speedups and, when zero,
// WallSeconds.
type Runner interface {
	RunProblem(ctx context.Context, job Job) (ProblemResult, error)
}

// Job is one problem to run.
type Job struct {
	Problem Problem
	Level   int
	// Dir is the problem's kernel dir in the sweep dir (problems/<key>):
	// problem.py, the first kernel, kagent.yaml.
	Dir string
	// RunDir is where its optimization run writes artifacts (runs/<key>).
	RunDir string
	// RunID is the id of its optimization run in Store (the problem's key).
	RunID string
	// Slot is the device slot to run on (a GPU id; "" when the platform has
	// no slots).
	Slot string
	// Store is the sweep's history.
	Store *store.Store
	// Phase reports progress ("generating", "optimizing"), which `kagent
	// sweep status` shows.
	Phase  func(phase, message string)
	Logger *slog.Logger
}

// Options configure Run. Dir, Source, Runner and a selection are required.
type Options struct {
	// Dir is the sweep dir (created if missing).
	Dir string
	// Source is the problems folder: a KernelBench checkout with Level > 0,
	// or any folder of problem files.
	Source    string
	Level     int
	Selection Selection
	// Strategy is recorded in the manifest: shards and merges must agree.
	Strategy string
	// Size is the timed shape asked for (the config's size: "" for the
	// problems' own); recorded in the manifest like Strategy.
	Size string
	// Shard, when set, runs only the shard's slice and writes its own
	// results file (shard-i-of-n.json) and store; the report is left to
	// Merge.
	Shard *Shard
	// Runner runs one problem.
	Runner Runner
	// Slots are the device slots (GPU ids): one problem at a time on each.
	// Without slots, Workers problems run at once (default 1).
	Slots   []string
	Workers int
	Logger  *slog.Logger
	// Progress receives one line per finished problem (nil: none).
	Progress io.Writer
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Summary is what a sweep (or a merge) did.
type Summary struct {
	Dir      string   `json:"dir"`
	Manifest Manifest `json:"sweep"`
	// Shard is "i/n" for a shard run.
	Shard string `json:"shard,omitempty"`
	// Problems is the size of the slice run (all problems without a shard).
	Problems int `json:"problems"`
	// Ran counts the problems run now; Skipped those finished before.
	Ran     int `json:"ran"`
	Skipped int `json:"skipped"`
	// Results of the slice, by id (possibly fewer than Problems).
	Results []ProblemResult `json:"results"`
	// Complete: every problem of the slice has a final result.
	Complete bool `json:"complete"`
	// ResultsPath is the results file written; ReportPath the report ("" for
	// a shard).
	ResultsPath string `json:"results_path"`
	ReportPath  string `json:"report_path,omitempty"`
	// MissingShards lists the shards a merge found no file of ("1/4").
	MissingShards []string `json:"missing_shards,omitempty"`
}

// Count counts the results with the given status.
func (s Summary) Count(status Status) int {
	n := 0
	for _, r := range s.Results {
		if r.Status == status {
			n++
		}
	}
	return n
}

// Correct counts the results whose final kernel is correct.
func (s Summary) Correct() int {
	n := 0
	for _, r := range s.Results {
		if r.Correct {
			n++
		}
	}
	return n
}

// Store records: the sweep itself is the run "sweep" of its store, and each
// problem's result an event of it.
const (
	sweepRunID       = "sweep"
	sweepStrategy    = "sweep"
	eventResult      = "sweep.result"
	stateFile        = "state.json"
	problemResultOut = "result.json"
)

// Run runs a sweep: the selected problems (or the shard's slice of them), each
// by the Runner, spread over the slots. A problem with a final result in the
// sweep's store is skipped; one that was cut short is run again (the Runner
// resumes its optimization). Results go to the store, to
// problems/<key>/result.json and to the results file (results.json, or
// shard-i-of-n.json for a shard), which is rewritten after every problem;
// without a shard the report is written too. A cancelled ctx stops the
// sweep after recording what finished; the error is then the context's.
func Run(ctx context.Context, o Options) (Summary, error) {
	if o.Runner == nil {
		return Summary{}, errors.New("sweep: no runner")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return Summary{}, fmt.Errorf("sweep: %w", err)
	}
	_, all, err := FindProblems(o.Source, o.Level)
	if err != nil {
		return Summary{}, fmt.Errorf("sweep: %w", err)
	}
	problems := Select(all, o.Selection)
	if len(problems) == 0 {
		return Summary{}, fmt.Errorf("sweep: %w: none of the %d problems in %s has an id in %s", ErrNoProblems, len(all), o.Source, o.Selection)
	}
	if miss := o.Selection.Missing(problemIDs(all), 10); len(miss) > 0 {
		o.Logger.Warn("the selection names problems that have no file", "ids", miss)
	}
	m := Manifest{Format: FormatManifest, Source: o.Source, Level: o.Level, Selection: o.Selection.String(),
		Strategy: o.Strategy, Size: o.Size, Problems: problems}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Summary{}, fmt.Errorf("sweep: %w", err)
	}
	if err := claimDir(dir, m); err != nil {
		return Summary{}, err
	}
	slice, resultsName, storeName, shard := problems, ResultsFile, StoreFile, ""
	if o.Shard != nil {
		slice, resultsName, storeName, shard = o.Shard.Of(problems), o.Shard.FileName(), o.Shard.storeName(), o.Shard.String()
	}
	st, err := store.Open(ctx, filepath.Join(dir, storeName))
	if err != nil {
		return Summary{}, fmt.Errorf("sweep: %w", err)
	}
	defer st.Close()
	s := &sweep{o: o, dir: dir, m: m, st: st, shard: shard, slice: slice, resultsPath: filepath.Join(dir, resultsName)}
	if err := s.openRun(ctx); err != nil {
		return Summary{}, err
	}
	return s.run(ctx)
}

// claimDir writes the manifest into a new sweep dir, or checks that the
// one there describes the same sweep.
func claimDir(dir string, m Manifest) error {
	have, ok, err := readManifest(dir)
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	if ok {
		if err := have.Compatible(m); err != nil {
			return fmt.Errorf("sweep: %s was started for level %d problems %s (strategy %s): %w; use another --out",
				dir, have.Level, have.Selection, have.Strategy, err)
		}
		return nil
	}
	return writeJSON(filepath.Join(dir, ManifestFile), m)
}

// sweep is one Run in progress.
type sweep struct {
	o           Options
	dir         string
	m           Manifest
	st          *store.Store
	shard       string
	slice       []Problem
	resultsPath string

	mu      sync.Mutex // serializes the results file
	results map[int]ProblemResult
	ran     int
}

// openRun creates (or reopens) the sweep's own run in the store.
func (s *sweep) openRun(ctx context.Context) error {
	run, err := s.st.GetRun(ctx, sweepRunID)
	switch {
	case errors.Is(err, store.ErrNotFound):
		_, err = s.st.CreateRun(ctx, store.Run{ID: sweepRunID, KernelDir: s.dir, Problem: newView(s.m, nil).title(),
			Strategy: sweepStrategy, ConfigYAML: "strategy: " + s.m.Strategy + "\n"})
	case err == nil && run.Status != store.RunFinished && run.Status != store.RunRunning:
		err = s.st.ReopenRun(ctx, sweepRunID)
	}
	if err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// stored reads the results recorded in the store: the latest per problem.
func (s *sweep) stored(ctx context.Context) (map[int]ProblemResult, error) {
	evs, err := s.st.Events(ctx, sweepRunID, 0, 0)
	if err != nil {
		return nil, fmt.Errorf("sweep: read results: %w", err)
	}
	out := map[int]ProblemResult{}
	for _, e := range evs {
		if e.Kind != eventResult {
			continue
		}
		var r ProblemResult
		if err := json.Unmarshal(e.Data, &r); err != nil {
			s.o.Logger.Warn("unreadable result in the store", "event", e.ID, "err", err)
			continue
		}
		out[r.ID] = r
	}
	return out, nil
}

func (s *sweep) run(ctx context.Context) (Summary, error) {
	prev, err := s.stored(ctx)
	if err != nil {
		return Summary{}, err
	}
	s.results = prev
	var todo []Problem
	skipped := 0
	for _, p := range s.slice {
		if r, ok := prev[p.ID]; ok && r.Status.Final() {
			skipped++
			continue
		}
		todo = append(todo, p)
	}
	s.o.Logger.Info("sweep", "dir", s.dir, "shard", s.shard, "problems", len(s.slice), "finished_before", skipped, "to_run", len(todo))
	if err := s.writeResults(); err != nil {
		return Summary{}, err
	}

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	slots := s.o.Slots
	if len(slots) == 0 {
		slots = make([]string, max(1, s.o.Workers))
	}
	queue := make(chan Problem)
	var wg sync.WaitGroup
	var fatalOnce sync.Once
	var fatal error
	for _, slot := range slots {
		wg.Go(func() {
			for p := range queue {
				if err := s.one(rctx, p, slot); err != nil {
					fatalOnce.Do(func() { fatal = err; cancel(err) })
				}
			}
		})
	}
feed:
	for _, p := range todo {
		select {
		case queue <- p:
		case <-rctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()

	bg := context.WithoutCancel(ctx)
	sum, werr := s.finish(bg)
	sum.Skipped = skipped
	switch {
	case fatal != nil:
		_ = s.st.FinishRun(bg, sweepRunID, store.RunFailed, oneLine(fatal.Error()))
		return sum, fatal
	case ctx.Err() != nil:
		_ = s.st.FinishRun(bg, sweepRunID, store.RunInterrupted, "interrupted")
		return sum, fmt.Errorf("sweep interrupted: %w", context.Cause(ctx))
	case werr != nil:
		return sum, werr
	}
	if sum.Complete && s.o.Shard == nil {
		if run, err := s.st.GetRun(bg, sweepRunID); err == nil && run.Status == store.RunRunning {
			_ = s.st.FinishRun(bg, sweepRunID, store.RunFinished, fmt.Sprintf("%d problems, %d correct", sum.Problems, sum.Correct()))
		}
	}
	return sum, nil
}

// one runs one problem and records its result. The error is fatal to the
// sweep (the store or the results file cannot be written).
func (s *sweep) one(ctx context.Context, p Problem, slot string) error {
	start := s.o.Now()
	s.setState(p, "running", "", start)
	job := Job{Problem: p, Level: s.m.Level, Dir: filepath.Join(s.dir, ProblemsDir, p.Key()), RunDir: filepath.Join(s.dir, RunsDir, p.Key()),
		RunID: p.Key(), Slot: slot, Store: s.st, Logger: s.o.Logger.With("problem", p.Key()),
		Phase: func(phase, msg string) { s.setState(p, phase, msg, s.o.Now()) }}
	res, err := s.o.Runner.RunProblem(ctx, job)
	if err != nil {
		if ctx.Err() != nil {
			s.setState(p, "interrupted", oneLine(err.Error()), s.o.Now())
			return nil
		}
		s.o.Logger.Warn("problem ended on an error; the next sweep runs it again", "problem", p.Key(), "err", err)
		res = ProblemResult{Status: StatusError, Error: oneLine(err.Error())}
	}
	end := s.o.Now()
	s.relativePaths(p, &res)
	res.ID, res.Name, res.File, res.Level, res.Shard, res.FinishedAt = p.ID, p.Name, p.File, s.m.Level, s.shard, end.UTC()
	if res.WallSeconds == 0 {
		res.WallSeconds = end.Sub(start).Seconds()
	}
	res.fillSpeedups()
	if err := s.record(context.WithoutCancel(ctx), res); err != nil {
		return err
	}
	s.setState(p, string(res.Status), oneLine(res.Error), end)
	s.progress(res)
	return nil
}

// relativePaths rewrites the paths in a result's messages: those under the
// sweep dir relative to it, problem files as "levelL/<file>", so that
// results and reports hold no absolute path (and a shard's read the same
// wherever it ran).
func (s *sweep) relativePaths(p Problem, r *ProblemResult) {
	roots := []relpath.Root{{Dir: s.dir}}
	if p.Path != "" {
		folder := filepath.Dir(p.Path)
		roots = append(roots, relpath.Root{Dir: folder, As: filepath.Base(folder)})
	}
	r.Error = relpath.Text(r.Error, roots...)
	r.StopReason = relpath.Text(r.StopReason, roots...)
	if g := r.Generation; g != nil {
		for i, f := range g.Failures {
			g.Failures[i] = relpath.Text(f, roots...)
		}
	}
}

// record writes a result to the store, the problem's result.json and the
// results file.
func (s *sweep) record(ctx context.Context, r ProblemResult) error {
	data, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("sweep: record %s: %w", r.Key(), err)
	}
	msg := fmt.Sprintf("%s: %s", r.Key(), statusCell(r))
	if _, err := s.st.AddEvent(ctx, store.Event{RunID: sweepRunID, Round: store.NoRound, Kind: eventResult, Message: msg, Data: data}); err != nil {
		return fmt.Errorf("sweep: record %s: %w", r.Key(), err)
	}
	if err := writeJSON(filepath.Join(s.dir, ProblemsDir, r.Key(), problemResultOut), r); err != nil {
		return fmt.Errorf("sweep: record %s: %w", r.Key(), err)
	}
	s.mu.Lock()
	s.results[r.ID] = r
	s.ran++
	s.mu.Unlock()
	return s.writeResults()
}

// sliceResults are the known results of the slice, by id.
func (s *sweep) sliceResults() []ProblemResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ProblemResult
	for _, p := range s.slice {
		if r, ok := s.results[p.ID]; ok {
			out = append(out, r)
		}
	}
	return out
}

// writeResults rewrites the results file from what is known.
func (s *sweep) writeResults() error {
	rs := s.sliceResults()
	ids := problemIDs(s.slice)
	f := Results{Format: FormatResults, Sweep: s.m, Shard: s.shard, Problems: ids, Complete: complete(ids, rs),
		UpdatedAt: s.o.Now().UTC(), Results: rs}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Results == nil {
		f.Results = []ProblemResult{}
	}
	if err := writeJSON(s.resultsPath, f); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// finish writes the results file and, without a shard, the report.
func (s *sweep) finish(ctx context.Context) (Summary, error) {
	rs := s.sliceResults()
	ids := problemIDs(s.slice)
	sum := Summary{Dir: s.dir, Manifest: s.m, Shard: s.shard, Problems: len(s.slice), Ran: s.ran, Results: rs,
		Complete: complete(ids, rs), ResultsPath: s.resultsPath}
	if err := s.writeResults(); err != nil {
		return sum, err
	}
	if s.o.Shard != nil || len(rs) == 0 {
		return sum, nil
	}
	if err := WriteReport(s.dir, s.m, rs, s.o.Now()); err != nil {
		return sum, fmt.Errorf("sweep: %w", err)
	}
	sum.ReportPath = filepath.Join(s.dir, ReportFile)
	return sum, nil
}

// progress prints one line about a finished problem.
func (s *sweep) progress(r ProblemResult) {
	if s.o.Progress == nil {
		return
	}
	s.mu.Lock()
	n := s.ran
	s.mu.Unlock()
	line := fmt.Sprintf("[%d] %s: %s", n, r.Key(), statusCell(r))
	if r.Correct {
		line += fmt.Sprintf(", %s ms, %s eager, %s compile", msCell(r.Kernel), speedupCell(r.SpeedupEager), speedupCell(r.SpeedupCompile))
	} else if r.Error != "" {
		line += ": " + clip(r.Error, 160)
	}
	line += fmt.Sprintf(" (%.1f s)", r.WallSeconds)
	fmt.Fprintln(s.o.Progress, line)
}

// problemIDs lists the ids of the problems in order.
func problemIDs(ps []Problem) []int {
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}
