package ui

import (
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/kagent-kernels/kagent/internal/safefile"
)

// maxFileBytes bounds a file served from a run dir.
const maxFileBytes = 64 << 20

// textTypes are served as plain text, whatever they hold.
var textTypes = []string{".md", ".py", ".json", ".jsonl", ".yaml", ".yml", ".txt", ".log", ".csv"}

// file serves a file of a run's artifact dir. The name must be a clean
// relative path inside the dir ("..", absolute paths and links leaving the
// dir are refused); the response may run nothing (fileCSP).
func (s *Server) file(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if name == "" || strings.Contains(name, "\\") || slices.Contains(strings.Split(name, "/"), "..") ||
		path.Clean(name) != name || !filepath.IsLocal(filepath.FromSlash(name)) {
		s.fail(w, r, http.StatusBadRequest, "bad file name")
		return
	}
	_, st, d := s.openRun(w, r)
	if d == nil {
		return
	}
	dir := runDir(r.Context(), st, d.Run)
	if dir == "" {
		s.fail(w, r, http.StatusNotFound, "the run has no artifact dir here")
		return
	}
	b, err := safefile.Read(dir, filepath.FromSlash(name), maxFileBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		s.fail(w, r, http.StatusNotFound, "no such file in the run dir")
		return
	case errors.Is(err, safefile.ErrUnsafe):
		s.fail(w, r, http.StatusForbidden, "refused: not a regular file inside the run dir")
		return
	case err != nil:
		s.fail(w, r, http.StatusNotFound, "cannot read the file")
		return
	}
	ext := strings.ToLower(path.Ext(name))
	ctype := "application/octet-stream"
	switch {
	case ext == ".svg":
		ctype = "image/svg+xml"
	case ext == ".png":
		ctype = "image/png"
	case slices.Contains(textTypes, ext):
		ctype = "text/plain; charset=utf-8"
	default:
		if t := mime.TypeByExtension(ext); strings.HasPrefix(t, "image/") {
			ctype = t
		}
	}
	h := w.Header()
	h.Set("Content-Type", ctype)
	h.Set("Content-Security-Policy", fileCSP)
	if ctype == "application/octet-stream" {
		h.Set("Content-Disposition", "attachment")
	}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(b)
	}
}
