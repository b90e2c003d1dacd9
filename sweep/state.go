package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// State is a problem's progress as the process running it last wrote it
// (problems/<key>/state.json): what `kagent sweep status` shows for a
// problem without a final result.
type State struct {
	// Phase is running, generating, optimizing, interrupted, or the status
	// of the result (done, failed, error).
	Phase   string `json:"phase"`
	Message string `json:"message,omitempty"`
	// Shard is the shard that runs it ("" for a local run).
	Shard     string    `json:"shard,omitempty"`
	Host      string    `json:"host"`
	PID       int       `json:"pid"`
	UpdatedAt time.Time `json:"updated_at"`
}

var hostOnce = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil {
		return "?"
	}
	return h
})

// setState writes a problem's state file; a failure is logged, not fatal.
func (s *sweep) setState(p Problem, phase, msg string, at time.Time) {
	st := State{Phase: phase, Message: clip(msg, 300), Shard: s.shard, Host: hostOnce(), PID: os.Getpid(), UpdatedAt: at.UTC()}
	if err := writeJSON(filepath.Join(s.dir, ProblemsDir, p.Key(), stateFile), st); err != nil {
		s.o.Logger.Warn("write problem state", "problem", p.Key(), "err", err)
	}
}

// readState reads a problem's state file; ok is false when there is none.
func readState(dir string, p Problem) (State, bool) {
	b, err := os.ReadFile(filepath.Join(dir, ProblemsDir, p.Key(), stateFile))
	if err != nil {
		return State{}, false
	}
	var st State
	if json.Unmarshal(b, &st) != nil {
		return State{}, false
	}
	return st, true
}

// stale reports whether a state says a process of this host is working on
// the problem while that process is gone (killed).
func (st State) stale() bool {
	switch st.Phase {
	case "running", "generating", "optimizing":
	default:
		return false
	}
	if st.Host != hostOnce() || st.PID <= 0 {
		return false
	}
	p, err := os.FindProcess(st.PID)
	if err != nil {
		return true
	}
	return p.Signal(syscall.Signal(0)) != nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
