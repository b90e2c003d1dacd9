package ui

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/agent/store"
)

// source is one history file: a kernel dir's, or a sweep dir's.
type source struct {
	id    string // in URLs: k0, k1, ...
	label string // what the index shows
	dir   string // the kernel or sweep dir
	db    string
	sweep bool

	mu sync.Mutex
	st *store.Store
}

// store opens the history read-only the first time it exists.
func (s *source) store(ctx context.Context) (*store.Store, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st != nil {
		return s.st, nil
	}
	if _, err := os.Stat(s.db); errors.Is(err, fs.ErrNotExist) {
		return nil, errNoHistory
	}
	st, err := store.OpenReadOnly(ctx, s.db)
	if err != nil {
		return nil, err
	}
	s.st = st
	return st, nil
}

func (s *source) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st == nil {
		return nil
	}
	err := s.st.Close()
	s.st = nil
	return err
}

func (s *Server) source(id string) *source {
	for _, src := range s.sourceList() {
		if src.id == id {
			return src
		}
	}
	return nil
}

// runDir is the artifact dir a run recorded in its history (the last
// StoreEventRunDir event), else the default one under the kernel dir; ""
// when neither exists.
func runDir(ctx context.Context, st *store.Store, r store.Run) string {
	dir := ""
	if evs, err := st.Events(ctx, r.ID, 0, 0); err == nil {
		for _, e := range evs {
			if e.Kind != agent.StoreEventRunDir {
				continue
			}
			var d struct{ Dir string }
			if json.Unmarshal(e.Data, &d) == nil && filepath.IsAbs(d.Dir) {
				dir = d.Dir
			}
		}
	}
	if dir == "" && r.KernelDir != "" && filepath.IsLocal(r.ID) {
		dir = filepath.Join(r.KernelDir, ".kagent", "runs", r.ID)
	}
	if st, err := os.Stat(dir); dir == "" || err != nil || !st.IsDir() {
		return ""
	}
	return dir
}
