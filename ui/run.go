package ui

import (
	"context"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/internal/safefile"
)

// The files of a run dir the run page links to, and the plots it shows.
var (
	runFiles = []string{"report.md", "report.json", "best_kernel.py", "config.yaml", "events.jsonl"}
	runPlots = []string{"roofline.svg", "time_per_round.svg"}
)

// maxEventsShown is how many of a run's last events the run page lists
// (the live stream adds the later ones).
const maxEventsShown = 300

// maxTextBytes bounds a prompt or reply file shown on a candidate page.
const maxTextBytes = 4 << 20

// candRow is a candidate as the run page lists it.
type candRow struct {
	store.Candidate
	Best                       bool
	SpeedupInput, SpeedupEager float64
}

type roundView struct {
	Index    int
	Finished bool
	Cands    []candRow
}

type runView struct {
	Src         string
	Run         *store.RunDetail
	Usage       store.Usage
	Tokens      int64
	BestSpeedup float64
	Files       []string
	Plots       []string
	Rounds      []roundView
	Events      []store.Event
	LastEvent   int64
}

// openRun finds the run of a request's {src} and {run}; it answers the
// request itself (404, 500) and returns nil when it cannot.
func (s *Server) openRun(w http.ResponseWriter, r *http.Request) (*source, *store.Store, *store.RunDetail) {
	src := s.source(r.PathValue("src"))
	if src == nil {
		s.fail(w, r, http.StatusNotFound, "no such history")
		return nil, nil, nil
	}
	st, err := src.store(r.Context())
	if err != nil {
		s.failErr(w, r, "run history", err)
		return nil, nil, nil
	}
	d, err := st.GetRun(r.Context(), r.PathValue("run"))
	if err != nil {
		s.failErr(w, r, "run "+r.PathValue("run"), err)
		return nil, nil, nil
	}
	return src, st, d
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	src, st, d := s.openRun(w, r)
	if d == nil {
		return
	}
	v := runView{Src: src.id, Run: d}
	var err error
	if v.Usage, err = st.LLMUsage(ctx, d.ID); err != nil {
		s.failErr(w, r, "run "+d.ID, err)
		return
	}
	v.Tokens = v.Usage.PromptTokens + v.Usage.CompletionTokens
	evs, err := st.Events(ctx, d.ID, 0, 0)
	if err != nil {
		s.failErr(w, r, "run "+d.ID, err)
		return
	}
	if len(evs) > 0 {
		v.LastEvent = evs[len(evs)-1].ID
	}
	v.Events = evs[max(len(evs)-maxEventsShown, 0):]
	if dir := runDir(ctx, st, d.Run); dir != "" {
		for _, f := range runFiles {
			if safefile.Exists(dir, f) {
				v.Files = append(v.Files, f)
			}
		}
		for _, f := range runPlots {
			if safefile.Exists(dir, f) {
				v.Plots = append(v.Plots, f)
			}
		}
	}
	inputMS, eagerMS := medianOf(d.Baselines.Input), medianOf(d.Baselines.Eager)
	rounds := map[int]*roundView{}
	for _, rd := range d.Rounds {
		rounds[rd.Index] = &roundView{Index: rd.Index, Finished: rd.Finished()}
	}
	cands := slices.Clone(d.Candidates)
	slices.SortStableFunc(cands, func(a, b store.Candidate) int { return store.CompareIDs(a.ID, b.ID) })
	for _, c := range cands {
		rv := rounds[c.Round]
		if rv == nil {
			rv = &roundView{Index: c.Round}
			rounds[c.Round] = rv
		}
		row := candRow{Candidate: c, Best: c.ID == d.BestID,
			SpeedupInput: ratio(inputMS, c.MedianMS()), SpeedupEager: ratio(eagerMS, c.MedianMS())}
		if row.Best {
			v.BestSpeedup = row.SpeedupInput
		}
		rv.Cands = append(rv.Cands, row)
	}
	for _, rv := range rounds {
		v.Rounds = append(v.Rounds, *rv)
	}
	slices.SortFunc(v.Rounds, func(a, b roundView) int { return a.Index - b.Index })
	s.render(w, r, http.StatusOK, "run", v)
}

// textFile is a prompt or reply shown on a candidate page.
type textFile struct {
	Name, Text string
	Open       bool
}

type candidateView struct {
	Src, RunID                 string
	C                          store.Candidate
	Best                       bool
	SpeedupInput, SpeedupEager float64
	Diff                       []diffLine
	Texts                      []textFile
}

func (s *Server) candidatePage(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	src, st, d := s.openRun(w, r)
	if d == nil {
		return
	}
	c, err := st.Candidate(ctx, d.ID, r.PathValue("cand"))
	if err != nil {
		s.failErr(w, r, "candidate "+r.PathValue("cand"), err)
		return
	}
	v := candidateView{Src: src.id, RunID: d.ID, C: c, Best: c.ID == d.BestID,
		SpeedupInput: ratio(medianOf(d.Baselines.Input), c.MedianMS()),
		SpeedupEager: ratio(medianOf(d.Baselines.Eager), c.MedianMS())}
	if c.ParentID != "" {
		if p, err := st.Candidate(ctx, d.ID, c.ParentID); err == nil {
			v.Diff = unifiedDiff(p.Source, c.Source, 3)
		}
	}
	v.Texts = llmTexts(ctx, runDir(ctx, st, d.Run), c)
	s.render(w, r, http.StatusOK, "candidate", v)
}

// llmTexts reads the prompts and replies the run dir holds for a candidate:
// its parent's diagnosis in the round's folder, then the files of its own
// folder (optimize, refine, reflect), prompt before reply.
func llmTexts(_ context.Context, dir string, c store.Candidate) []textFile {
	if dir == "" {
		return nil
	}
	cdir := filepath.Clean(agent.CandidateDir(c.ID))
	if !filepath.IsLocal(cdir) {
		return nil
	}
	var out []textFile
	add := func(folder string, keep func(name string) bool) {
		ents, err := os.ReadDir(filepath.Join(dir, folder))
		if err != nil {
			return
		}
		for _, e := range ents {
			n := e.Name()
			if !e.Type().IsRegular() || !(strings.HasSuffix(n, ".prompt.md") || strings.HasSuffix(n, ".reply.md")) || !keep(n) {
				continue
			}
			b, err := safefile.Read(dir, filepath.Join(folder, n), maxTextBytes)
			if err != nil {
				continue
			}
			out = append(out, textFile{Name: path.Join(filepath.ToSlash(folder), n), Text: strings.ToValidUTF8(string(b), "\uFFFD"),
				Open: strings.HasSuffix(n, ".reply.md")})
		}
	}
	if c.ParentID != "" {
		add(filepath.Dir(cdir), func(n string) bool { return strings.HasPrefix(n, "diagnose-"+c.ParentID+".") })
	}
	add(cdir, func(string) bool { return true })
	return out
}
