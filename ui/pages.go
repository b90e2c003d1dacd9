package ui

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
)

// pages are the templates rendered as whole pages; layout.html holds the
// parts they share.
var pages = []string{"index", "run", "candidate", "sweep", "error"}

var funcs = template.FuncMap{
	"path": url.PathEscape,
	"ms": func(v float64) string {
		if v <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.4f", v)
	},
	"pct":     func(v float64) string { return fmt.Sprintf("%.1f%%", 100*v) },
	"speedup": speedupText,
	"when":    func(t time.Time) string { return t.Local().Format(time.DateTime) },
	"stamp":   func(t time.Time) string { return t.Local().Format("15:04:05.000") },
}

func speedupText(v float64) string {
	if v <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.3gx", v)
}

func parseTemplates() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, p := range pages {
		t, err := template.New(p).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("parse template %s: %w", p, err)
		}
		out[p] = t
	}
	return out, nil
}

func (s *Server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.index)
	mux.HandleFunc("GET /run/{src}/{run}", s.runPage)
	mux.HandleFunc("GET /run/{src}/{run}/c/{cand}", s.candidatePage)
	mux.HandleFunc("GET /run/{src}/{run}/events", s.events)
	mux.HandleFunc("GET /run/{src}/{run}/file/{name...}", s.file)
	mux.HandleFunc("GET /sweep/{n}", s.sweepPage)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "no such page")
	})
	return mux
}

// render writes page with data, or a 500 when the template fails (nothing is
// written before the page renders whole).
func (s *Server) render(w http.ResponseWriter, r *http.Request, status int, page string, data any) {
	var b bytes.Buffer
	if err := s.tmpl[page].ExecuteTemplate(&b, page+".html", data); err != nil {
		s.log.Error("render page", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b.Bytes())
	}
}

func (s *Server) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	s.render(w, r, status, "error", struct {
		Status  string
		Message string
	}{fmt.Sprintf("%d %s", status, http.StatusText(status)), msg})
}

// failErr answers an error of the store: 404 for an unknown id, 500 else.
func (s *Server) failErr(w http.ResponseWriter, r *http.Request, what string, err error) {
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, errNoHistory) {
		s.fail(w, r, http.StatusNotFound, "no "+what)
		return
	}
	s.log.Error("read history", "what", what, "err", err)
	s.fail(w, r, http.StatusInternalServerError, "cannot read "+what+": "+err.Error())
}

// runRow is one line of the index's run tables.
type runRow struct {
	store.Run
	Src             string
	BestMS, InputMS float64
	Speedup         float64
}

type sourceView struct {
	Src, Label string
	Sweep      bool
	Error      string
	Runs       []runRow
}

func (s *Server) index(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	var views []sourceView
	for _, src := range s.sourceList() {
		v := sourceView{Src: src.id, Label: src.label, Sweep: src.sweep}
		st, err := src.store(ctx)
		if errors.Is(err, errNoHistory) {
			views = append(views, v)
			continue
		}
		var runs []store.Run
		if err == nil {
			runs, err = st.ListRuns(ctx, store.RunFilter{})
		}
		if err != nil {
			v.Error = err.Error()
			views = append(views, v)
			continue
		}
		for _, run := range runs {
			row := runRow{Run: run, Src: src.id}
			if in := run.Baselines.Input; in != nil {
				row.InputMS = in.MedianMS
			}
			if run.BestID != "" {
				if b, err := st.Candidate(ctx, run.ID, run.BestID); err == nil {
					row.BestMS = b.MedianMS()
					row.Speedup = ratio(row.InputMS, row.BestMS)
				}
			}
			v.Runs = append(v.Runs, row)
		}
		views = append(views, v)
	}
	s.render(w, r, http.StatusOK, "index", struct {
		Sources []sourceView
		Sweeps  []string
	}{views, s.sweeps})
}

// ratio is base/t, 0 when either is unknown.
func ratio(base, t float64) float64 {
	if base <= 0 || t <= 0 {
		return 0
	}
	return base / t
}

// medianOf is a baseline's median, 0 when it has none.
func medianOf(t *platform.Timing) float64 {
	if t == nil || t.Unavailable != "" {
		return 0
	}
	return t.MedianMS
}
