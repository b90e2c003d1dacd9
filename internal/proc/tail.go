package proc

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// Tail is an io.Writer that keeps the last bytes written to it, for the
// output tail of an error. It is safe for concurrent use.
type Tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTail returns a Tail that keeps the last max bytes.
func NewTail(max int) *Tail { return &Tail{max: max} }

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(p) >= t.max {
		t.buf = append(t.buf[:0], p[len(p)-t.max:]...)
		return len(p), nil
	}
	if over := len(t.buf) + len(p) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return len(p), nil
}

// String returns what the Tail holds.
func (t *Tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// LastLines returns the last n lines of s (trailing newlines ignored),
// leaving out the lines skip reports (nil = none).
func LastLines(s string, n int, skip func(line string) bool) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	var keep []string
	for _, l := range lines {
		if skip == nil || !skip(l) {
			keep = append(keep, l)
		}
	}
	if len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return strings.Join(keep, "\n")
}

// Interface guards.
var _ io.Writer = (*Tail)(nil)

// StderrSink returns where a child process's stderr goes: the tail, and
// where KAGENT_WORKER_STDERR names a directory, also a new file in it
// (kind-pid-counter.log; kept after the process ends) for diagnosing a
// worker that a time limit killed without an error. The returned close
// function closes that file.
func StderrSink(tail *Tail, kind string) (io.Writer, func()) {
	dir := os.Getenv("KAGENT_WORKER_STDERR")
	if dir == "" {
		return tail, func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return tail, func() {}
	}
	n := sinkCount.Add(1)
	f, err := os.OpenFile(filepath.Join(dir, fmt.Sprintf("%s-%d-%d.log", kind, os.Getpid(), n)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return tail, func() {}
	}
	return io.MultiWriter(tail, f), func() { f.Close() }
}

var sinkCount atomic.Int64
