package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Options configure a Server.
type Options struct {
	// KernelDirs are kernel dirs whose history (D/.kagent/history.db) is
	// shown; Sweeps are sweep dirs (results.json, history*.db).
	KernelDirs []string
	Sweeps     []string
	// Poll is how often the live event stream looks for new events
	// (default 1 s).
	Poll time.Duration
	// Logger logs requests that fail (default: discard).
	Logger *slog.Logger
}

// Server is the web view. It is safe for concurrent use.
type Server struct {
	opts Options
	// srcMu guards sources, which grows as sweep shards write new
	// histories (sourceList).
	srcMu   sync.Mutex
	sources []*source
	sweeps  []string
	tmpl    map[string]*template.Template
	log     *slog.Logger
	mux     *http.ServeMux
	// streams counts the live event streams being served.
	streams atomic.Int64
}

// New checks the dirs and builds a Server. Histories are opened read-only
// when first needed, so a kernel dir without runs yet shows them once a run
// starts.
func New(o Options) (*Server, error) {
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{opts: o, log: o.Logger}
	for _, d := range o.KernelDirs {
		abs, err := existingDir(d)
		if err != nil {
			return nil, fmt.Errorf("kernel dir: %w", err)
		}
		s.sources = append(s.sources, &source{id: fmt.Sprintf("k%d", len(s.sources)), label: abs, dir: abs,
			db: filepath.Join(abs, ".kagent", "history.db")})
	}
	for _, d := range o.Sweeps {
		abs, err := existingDir(d)
		if err != nil {
			return nil, fmt.Errorf("sweep dir: %w", err)
		}
		s.sweeps = append(s.sweeps, abs)
	}
	s.sourceList()
	var err error
	if s.tmpl, err = parseTemplates(); err != nil {
		return nil, err
	}
	s.mux = s.routes()
	return s, nil
}

func existingDir(d string) (string, error) {
	abs, err := filepath.Abs(d)
	if err != nil {
		return "", fmt.Errorf("%s: %w", d, err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("%s: %w", d, ErrNoDir)
	case err != nil:
		return "", fmt.Errorf("%s: %w", d, err)
	case !st.IsDir():
		return "", fmt.Errorf("%s is not a directory: %w", d, ErrNoDir)
	}
	return abs, nil
}

// sourceList is the histories shown: the kernel dirs', then each sweep
// dir's history*.db files, looked for again on every call so that a shard
// that starts after the server is shown too. Ids stay as first given.
func (s *Server) sourceList() []*source {
	s.srcMu.Lock()
	defer s.srcMu.Unlock()
	known := map[string]bool{}
	for _, src := range s.sources {
		known[src.db] = true
	}
	for _, dir := range s.sweeps {
		dbs, _ := filepath.Glob(filepath.Join(dir, "history*.db"))
		for _, db := range dbs {
			if !known[db] {
				known[db] = true
				s.sources = append(s.sources, &source{id: fmt.Sprintf("k%d", len(s.sources)), label: db, dir: dir, db: db, sweep: true})
			}
		}
	}
	return slices.Clone(s.sources)
}

// Close closes the histories the server opened.
func (s *Server) Close() error {
	var errs []error
	for _, src := range s.sourceList() {
		errs = append(errs, src.close())
	}
	return errors.Join(errs...)
}

// ServeHTTP answers GET and HEAD requests; every other method is 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", pageCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cache-Control", "no-store")
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed: kagent ui is read-only", http.StatusMethodNotAllowed)
		return
	}
	s.mux.ServeHTTP(w, r)
}

// Content security policies: pages load only the server's own script and
// style; served artifacts (SVG plots, text) may run nothing at all.
const (
	pageCSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
	fileCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; sandbox"
)

// Serve serves on ln until ctx is done, then shuts down: open event streams
// end (their requests' context is ctx's child) and requests in flight get a
// few seconds to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if e := <-errc; !errors.Is(e, http.ErrServerClosed) {
		err = errors.Join(err, e)
	}
	if err != nil {
		return fmt.Errorf("shut down: %w", err)
	}
	return nil
}

// IsLoopback reports whether addr (host:port) binds only to a loopback
// address ("localhost" included).
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
