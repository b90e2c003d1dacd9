package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// ErrNoPython: the Python interpreter that runs the harness's scripts is
// missing.
var ErrNoPython = errors.New("no Python interpreter")

// Script is one run of a harness script (a file of the kagent_harness
// package) by a Python interpreter: the kernel dir check, the knob finder,
// doctor's probe. Install, the interpreter's lookup, the time limit and the
// reading of errors are the same for all of them.
type Script struct {
	// Name is the script's file name in the package ("knobs.py").
	Name string
	// Python is the interpreter ("" = python3).
	Python string
	// Args follow the script's path.
	Args []string
	// Isolated runs Python with -I (no user site, no PYTHON* variables, no
	// script folder on the path beyond the harness's own imports).
	Isolated bool
	// Dir is the working folder ("" = this process's).
	Dir   string
	Stdin io.Reader
	// Timeout bounds the run (0 = one minute).
	Timeout time.Duration
	// CacheDir is where the harness is installed ("" = CacheDir()).
	CacheDir string
}

// Output installs the harness, runs the script and returns its standard
// output. A missing interpreter wraps ErrNoPython; a failure carries the last
// line of the script's standard error.
func (s Script) Output(ctx context.Context) ([]byte, error) {
	cache := s.CacheDir
	if cache == "" {
		cache = CacheDir()
	}
	dir, err := Install(cache)
	if err != nil {
		return nil, err
	}
	py := s.python()
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	args := []string{filepath.Join(dir, Package, s.Name)}
	if s.Isolated {
		args = append([]string{"-I"}, args...)
	}
	cmd := exec.CommandContext(ctx, py, append(args, s.Args...)...)
	cmd.Dir = s.Dir
	cmd.Stdin = s.Stdin
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.Error
		if errors.As(err, &ee) || errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s not found; install Python 3 or set KAGENT_PYTHON", ErrNoPython, py)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s %s: %w", py, s.Name, ctx.Err())
		}
		return nil, fmt.Errorf("%s %s failed: %v: %s", py, s.Name, err, lastLine(stderr.String()))
	}
	return out, nil
}

// JSON runs the script and decodes its standard output into v.
func (s Script) JSON(ctx context.Context, v any) error {
	out, err := s.Output(ctx)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("unreadable report from %s %s: %w", s.python(), s.Name, err)
	}
	return nil
}

// python is the interpreter that runs the script.
func (s Script) python() string {
	if s.Python == "" {
		return "python3"
	}
	return s.Python
}

// lastLine is the last non-empty line of s (a Python traceback's error).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
