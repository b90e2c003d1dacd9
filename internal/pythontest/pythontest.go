// Package pythontest finds the Python the tests that run Triton kernels on
// the CPU need.
package pythontest

import (
	"os"
	"os/exec"
	"testing"
)

// Triton returns $KAGENT_PYTHON when it can import triton. It skips the test
// without one (or under -short), unless KAGENT_REQUIRE_TRITON=1 (make test,
// CI) makes a Python without triton a failure.
func Triton(t testing.TB) string {
	t.Helper()
	py := os.Getenv("KAGENT_PYTHON")
	if py == "" || testing.Short() {
		t.Skip("KAGENT_PYTHON (a Python with torch and triton) is not set")
	}
	if err := exec.Command(py, "-c", "import triton").Run(); err != nil {
		if os.Getenv("KAGENT_REQUIRE_TRITON") == "1" {
			t.Fatalf("%s cannot import triton (KAGENT_REQUIRE_TRITON=1): %v", py, err)
		}
		t.Skipf("%s cannot import triton", py)
	}
	return py
}
