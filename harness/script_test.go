package harness

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func python(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KAGENT_PYTHON"); p != "" {
		return p
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	return p
}

// TestScript: one runner for every harness script: stdin and arguments reach
// the script, its JSON is decoded, and a missing interpreter, a failing
// script and a slow one each give the error callers test for.
func TestScript(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	var rep struct {
		Knobs []struct {
			Name string `json:"name"`
		} `json:"knobs"`
	}
	src := "import triton\n@triton.jit\ndef k(X, BLOCK: tl.constexpr):\n    pass\ndef kernel_function(x):\n    k[(1,)](x, BLOCK=128)\n"
	err := Script{Name: "knobs.py", Python: python(t), Isolated: true, Args: []string{"-"}, Stdin: strings.NewReader(src),
		CacheDir: cache}.JSON(ctx, &rep)
	if err != nil || len(rep.Knobs) == 0 || rep.Knobs[0].Name != "BLOCK" {
		t.Fatalf("knobs.py: %v %+v", err, rep)
	}

	_, err = Script{Name: "probe.py", Python: "/nonexistent/python3", CacheDir: cache}.Output(ctx)
	if !errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "KAGENT_PYTHON") {
		t.Errorf("missing interpreter: %v", err)
	}

	_, err = Script{Name: "no_such_script.py", Python: python(t), CacheDir: cache}.Output(ctx)
	if err == nil || errors.Is(err, ErrNoPython) || !strings.Contains(err.Error(), "no_such_script.py") {
		t.Errorf("failing script: %v", err)
	}

	// knobs.py waits for its stdin, which never closes within the limit.
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	_, err = Script{Name: "knobs.py", Python: python(t), Args: []string{"-"}, Stdin: r, Timeout: 200 * time.Millisecond,
		CacheDir: cache}.Output(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow script: %v", err)
	}
}
