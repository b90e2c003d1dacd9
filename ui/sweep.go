package ui

import (
	"net/http"
	"strconv"

	"github.com/kagent-kernels/kagent/sweep"
)

// fastPRow is fast_p at one threshold against both baselines.
type fastPRow struct {
	P                float64
	Eager, Compile   float64
	EagerN, CompileN int
}

// problemRow is one problem of a sweep; RunSrc is the history that holds
// its run ("" when none of the sweep's histories does).
type problemRow struct {
	sweep.ProblemStatus
	RunID, RunSrc string
}

type sweepView struct {
	Dir    string
	Error  string
	Report sweep.StatusReport
	FastP  []fastPRow
	N      int
	Rows   []problemRow
}

func (s *Server) sweepPage(w http.ResponseWriter, r *http.Request) {
	n, err := strconv.Atoi(r.PathValue("n"))
	if err != nil || n < 0 || n >= len(s.sweeps) {
		s.fail(w, r, http.StatusNotFound, "no such sweep")
		return
	}
	dir := s.sweeps[n]
	v := sweepView{Dir: dir}
	rep, err := sweep.ReadStatus(dir)
	if err != nil {
		v.Error = err.Error()
		s.render(w, r, http.StatusOK, "sweep", v)
		return
	}
	v.Report, v.N = rep, len(rep.Problems)
	eager := make([]sweep.Outcome, len(rep.Problems))
	compile := make([]sweep.Outcome, len(rep.Problems))
	for i, p := range rep.Problems {
		row := problemRow{ProblemStatus: p}
		if p.Result != nil {
			eager[i], compile[i] = p.Result.Outcome(false), p.Result.Outcome(true)
			row.RunID = p.Result.RunID
			row.RunSrc = s.runSource(r, dir, row.RunID)
		}
		v.Rows = append(v.Rows, row)
	}
	for _, p := range sweep.Ps {
		row := fastPRow{P: p, Eager: sweep.FastP(eager, p), Compile: sweep.FastP(compile, p)}
		for i := range eager {
			if eager[i].Correct && eager[i].Speedup > p {
				row.EagerN++
			}
			if compile[i].Correct && compile[i].Speedup > p {
				row.CompileN++
			}
		}
		v.FastP = append(v.FastP, row)
	}
	s.render(w, r, http.StatusOK, "sweep", v)
}

// runSource is the id of the sweep dir's history that holds run id.
func (s *Server) runSource(r *http.Request, dir, id string) string {
	if id == "" {
		return ""
	}
	for _, src := range s.sourceList() {
		if !src.sweep || src.dir != dir {
			continue
		}
		st, err := src.store(r.Context())
		if err != nil {
			continue
		}
		if _, err := st.GetRun(r.Context(), id); err == nil {
			return src.id
		}
	}
	return ""
}
