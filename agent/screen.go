package agent

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search"
)

// screensFile holds, in the run dir, every screen of the run, one JSON line
// per variant: a resumed run reads its screens back instead of screening
// again, so its strategy picks what the interrupted run would have.
const screensFile = "screen/screens.jsonl"

// screenLine is one line of screensFile.
type screenLine struct {
	Hash     string  `json:"source_sha256"`
	Label    string  `json:"label"`
	Passed   bool    `json:"passed"`
	Failure  string  `json:"failure,omitempty"`
	Reason   string  `json:"reason,omitempty"`
	MedianMS float64 `json:"median_ms,omitempty"`
	// Shapes are the screen times at the held-out shapes.
	Shapes []platform.ShapeTime `json:"shapes,omitempty"`
	// HeldOut marks the line of a contender screened at the held-out shapes
	// once the search ended (heldOut); MedianMS is then its walk's.
	HeldOut bool `json:"held_out,omitempty"`
}

// screener is the loop's tuner on a platform that screens: the knob space
// of package tune, and screens run on the session (platform.Screener), each
// variant's source written under the run dir's screen/ first.
type screener struct {
	search.Spacer
	l     *loop
	sc    platform.Screener
	round int

	mu     sync.Mutex
	done   map[string]screenLine // by source hash, read from screensFile once
	method string                // how the last screen screened
	held   string                // how the contenders were screened at the held-out shapes
}

// withScreener gives the strategy a tuner that also screens, where the
// tuner enumerates spaces and the session screens; else the tuner as it is.
func withScreener(l *loop, t search.Tuner, sess platform.Session) search.Tuner {
	sp, ok := t.(search.Spacer)
	sc, ok2 := sess.(platform.Screener)
	if !ok || !ok2 {
		return t
	}
	s := &screener{Spacer: sp, l: l, sc: sc}
	l.scr = s
	return s
}

// Screen screens the variants not screened in this run before; the others
// are read back.
func (s *screener) Screen(ctx context.Context, vs []search.Variant) ([]search.Screen, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	out := make([]search.Screen, len(vs))
	var todo []int
	var cs []platform.Candidate
	for i, v := range vs {
		h := store.SourceHash(v.Source)
		if d, ok := s.done[h]; ok {
			out[i] = search.Screen{Passed: d.Passed, MedianMS: d.MedianMS, Failure: d.Failure}
			continue
		}
		rel := fmt.Sprintf("screen/%s.py", h[:16])
		if err := s.l.art.write(rel, []byte(v.Source)); err != nil {
			return nil, &fatalError{err}
		}
		todo = append(todo, i)
		cs = append(cs, platform.Candidate{ID: "screen-" + h[:12], Path: s.l.art.path(rel), Source: v.Source})
	}
	if len(cs) == 0 {
		return out, nil
	}
	// The walk screens at the timed shape alone; its contenders go to the
	// held-out shapes once, when the search has ended (heldOut).
	rep, err := s.sc.Screen(ctx, cs, platform.ScreenOptions{HeldOut: platform.HeldOutNone})
	if err != nil {
		return nil, err
	}
	var lines bytes.Buffer
	passed, fastest := 0, 0.0
	for k, i := range todo {
		r := rep.Results[k]
		d := screenLine{Hash: store.SourceHash(vs[i].Source), Label: vs[i].Label, Passed: r.Passed,
			Failure: r.Failure, Reason: oneLine(r.Reason), MedianMS: r.MedianMS, Shapes: r.Shapes}
		s.done[d.Hash] = d
		b, _ := json.Marshal(d)
		lines.Write(append(b, '\n'))
		out[i] = search.Screen{Passed: r.Passed, MedianMS: r.MedianMS, Failure: r.Failure}
		if r.Passed {
			passed++
			if fastest == 0 || r.MedianMS < fastest {
				fastest = r.MedianMS
			}
		}
	}
	s.method = rep.Method
	if err := s.l.art.appendTo(screensFile, lines.Bytes()); err != nil {
		return nil, &fatalError{err}
	}
	s.l.ev.emit(Event{Event: EventScreened, Round: ptr(s.round), Screened: len(cs), Slots: passed,
		MedianMS: fastest, ScreenS: rep.Duration.Seconds(), Compiled: rep.Compiled, Reason: rep.Method,
		LoadS: rep.Phases["load_s"], CompileS: rep.Phases["compile_s"]})
	return out, nil
}

// Contenders screened at the held-out shapes when strategy_config leaves
// held_out_top and held_out_within_pct at zero.
const (
	heldOutTop       = 12
	heldOutWithinPct = 25.0
)

// heldOut screens the run's contenders at the problem's held-out shapes once
// its search has ended: the held_out_top fastest screened variants that
// passed, each within held_out_within_pct of the fastest. The report's
// Pareto set is drawn from them. A contender wrong at a held-out shape is
// marked failed (extra_shapes); one screened there before (a resumed
// finish) is not screened again.
func (s *screener) heldOut(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	picks, err := s.heldOutPicks()
	if err != nil {
		return err
	}
	pct := cmp.Or(s.l.cfg.StrategyConfig.HeldOutWithinPct, heldOutWithinPct)
	var picked []screenLine
	var cs []platform.Candidate
	for _, d := range picks {
		rel := fmt.Sprintf("screen/%s.py", d.Hash[:16])
		src, err := os.ReadFile(s.l.art.path(rel))
		if err != nil {
			return fmt.Errorf("held-out screen: %w", err)
		}
		picked = append(picked, d)
		cs = append(cs, platform.Candidate{ID: "screen-" + d.Hash[:12], Path: s.l.art.path(rel), Source: string(src)})
	}
	if len(cs) == 0 {
		return nil
	}
	rep, err := s.sc.Screen(ctx, cs, platform.ScreenOptions{HeldOut: platform.HeldOutOnly})
	if err != nil {
		return err
	}
	var lines bytes.Buffer
	ok := 0
	for k, d := range picked {
		r := rep.Results[k]
		d.HeldOut = true
		if r.Passed {
			d.Shapes = r.Shapes
			ok++
		} else {
			d.Passed, d.Failure, d.Reason = false, r.Failure, oneLine(r.Reason)
		}
		s.done[d.Hash] = d
		b, _ := json.Marshal(d)
		lines.Write(append(b, '\n'))
	}
	s.held = fmt.Sprintf("once the search ended, its %d fastest within %g%% of the fastest: %s", len(cs), pct, rep.Method)
	if err := s.l.art.appendTo(screensFile, lines.Bytes()); err != nil {
		return err
	}
	s.l.ev.emit(Event{Event: EventScreened, Round: ptr(s.round), Screened: len(cs), Slots: ok,
		ScreenS: rep.Duration.Seconds(), Compiled: rep.Compiled, Reason: rep.Method,
		LoadS: rep.Phases["load_s"], CompileS: rep.Phases["compile_s"]})
	return nil
}

// heldOutPicks are the contenders heldOut screens: none without held-out
// shapes, else those not screened at them yet. s.mu is held.
func (s *screener) heldOutPicks() ([]screenLine, error) {
	if len(s.l.in.Task.Options.Shapes) == 0 {
		return nil, nil
	}
	if err := s.load(); err != nil {
		return nil, err
	}
	sc := s.l.cfg.StrategyConfig
	var out []screenLine
	for _, d := range contenders(s.passed(), cmp.Or(sc.HeldOutTop, heldOutTop), cmp.Or(sc.HeldOutWithinPct, heldOutWithinPct)) {
		if !d.HeldOut {
			out = append(out, d)
		}
	}
	return out, nil
}

// heldOutDue reports whether heldOut would screen (and so time) anything
// now; true where the screens cannot be read back, to be safe.
func (s *screener) heldOutDue() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	picks, err := s.heldOutPicks()
	return err != nil || len(picks) > 0
}

// contenders are the top fastest of passed (fastest first), each within
// pct percent of the fastest.
func contenders(passed []screenLine, top int, pct float64) []screenLine {
	passed = passed[:min(top, len(passed))]
	for i, d := range passed {
		if d.MedianMS > passed[0].MedianMS*(1+pct/100) {
			return passed[:i]
		}
	}
	return passed
}

// passed are the screened variants that passed, fastest first.
func (s *screener) passed() []screenLine {
	var passed []screenLine
	for _, d := range s.done {
		if d.Passed && d.MedianMS > 0 {
			passed = append(passed, d)
		}
	}
	slices.SortFunc(passed, func(a, b screenLine) int {
		return cmp.Or(cmp.Compare(a.MedianMS, b.MedianMS), strings.Compare(a.Hash, b.Hash))
	})
	return passed
}

// paretoShown bounds the Pareto variants a report lists.
const paretoShown = 12

// summary is the report's view of the run's screens: the variants no other
// screened variant beats at every shape (search.Pareto at the screen's
// resolution), fastest at the timed shape first; ids maps a source hash to
// the candidate that verified and timed it in full. Nil when nothing was
// screened.
func (s *screener) summary(ids map[string]string) (*report.Screening, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	if len(s.done) == 0 {
		return nil, nil
	}
	sum := &report.Screening{Variants: len(s.done), Method: s.method}
	if sum.Method == "" {
		sum.Method = "screened before the run was resumed"
	}
	if s.held != "" {
		sum.Method += "; " + s.held
	}
	passed := s.passed()
	sum.Passed = len(passed)
	// The held-out shapes are those of the screens that have the most.
	for _, d := range passed {
		if len(d.Shapes) > len(sum.Shapes) {
			sum.Shapes = sum.Shapes[:0]
			for _, t := range d.Shapes {
				sum.Shapes = append(sum.Shapes, t.Label)
			}
		}
	}
	points := make([][]float64, len(passed))
	for i, d := range passed {
		if len(d.Shapes) != len(sum.Shapes) {
			continue // screened without the held-out shapes: not comparable
		}
		points[i] = []float64{d.MedianMS}
		for _, t := range d.Shapes {
			points[i] = append(points[i], t.MedianMS)
		}
	}
	front := search.Pareto(points, search.WalkGainPct)
	for n, i := range front {
		if n == paretoShown {
			sum.More = len(front) - n
			break
		}
		d := passed[i]
		sum.Pareto = append(sum.Pareto, report.ScreenedVariant{Label: d.Label, Source: fmt.Sprintf("screen/%s.py", d.Hash[:16]),
			ID: ids[d.Hash], MS: d.MedianMS, ShapesMS: points[i][1:]})
	}
	return sum, nil
}

// screened reports whether a screen of this run loaded the variant whose
// source has this hash (its kernels were compiled there).
func (s *screener) screened(hash string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.load() != nil {
		return false
	}
	_, ok := s.done[hash]
	return ok
}

// load reads screensFile once.
func (s *screener) load() error {
	if s.done != nil {
		return nil
	}
	s.done = map[string]screenLine{}
	f, err := os.Open(s.l.art.path(screensFile))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return &fatalError{fmt.Errorf("read screens: %w", err)}
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<24)
	for sc.Scan() {
		var d screenLine
		if json.Unmarshal(sc.Bytes(), &d) == nil && d.Hash != "" {
			s.done[d.Hash] = d
		}
	}
	return nil
}

// Interface guards
var (
	_ search.Spacer   = (*screener)(nil)
	_ search.Screener = (*screener)(nil)
)
