package kerneldir

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
	"github.com/kagent-kernels/kagent/internal/safefile"
)

// Pinning. The problem (and test.py) are read from the kernel dir once, when
// the dir is loaded; what every worker then loads, verifies against and
// gates with is a copy of those bytes written to kagent's cache under their
// SHA-256 (CACHE/pinned/<sha256>/problem.py, read-only). A candidate that
// rewrites the kernel dir's problem.py changes nothing, and Task.Repin puts
// a changed pinned copy back before each load.

// pinnedDir is the folder of the cache holding pinned copies.
const pinnedDir = "pinned"

// Sum is the hex SHA-256 of data.
func Sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// pin writes data as CACHE/pinned/<sha256>/name (mode 0444) unless an equal
// copy is there, and returns its path.
func pin(cache, name string, data []byte) (string, error) {
	dir := filepath.Join(cache, pinnedDir, Sum(data))
	p := filepath.Join(dir, name)
	if have, err := safefile.Read(dir, name, int64(len(data))); err == nil && bytes.Equal(have, data) {
		if st, err := os.Lstat(p); err == nil && st.Mode().Perm() == 0o444 {
			return p, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("pin %s: %w", name, err)
	}
	// Whatever is there (a changed copy, a link, a FIFO) is replaced whole.
	if err := atomicfile.Write(p, data, 0o444); err != nil {
		if rerr := os.RemoveAll(p); rerr != nil {
			return "", fmt.Errorf("pin %s: %w", name, err)
		}
		if err := atomicfile.Write(p, data, 0o444); err != nil {
			return "", fmt.Errorf("pin %s: %w", name, err)
		}
	}
	return p, nil
}

// pinFiles pins the problem and test.py of t under cache and points
// ProblemPath and TestPath at the copies.
func (t *Task) pinFiles(cache string) error {
	p, err := pin(cache, ProblemFile, []byte(t.ProblemSource))
	if err != nil {
		return err
	}
	t.ProblemPath, t.pinCache = p, cache
	if t.TestPath != "" {
		if t.TestPath, err = pin(cache, TestFile, []byte(t.TestSource)); err != nil {
			return err
		}
	}
	return nil
}

// Repin checks that the pinned copies still hold what was read from the
// kernel dir and writes them again where they do not. The worker pool calls
// it before every problem load, so a pinned copy changed by code that ran as
// the same user (a candidate) never reaches a load. A Task built by hand
// (not by Load) has nothing pinned; Repin leaves its paths alone.
func (t *Task) Repin() error {
	if t.pinCache == "" {
		return nil
	}
	return t.pinFiles(t.pinCache)
}
