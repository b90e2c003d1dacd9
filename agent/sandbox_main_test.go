package agent

import (
	"os"
	"testing"

	"github.com/kagent-kernels/kagent/internal/sandbox"
)

// TestMain lets the test binary serve as the sandbox's init: the runners of
// the workers these tests start run in the OS sandbox, as under kagent.
func TestMain(m *testing.M) {
	sandbox.Main()
	os.Exit(m.Run())
}
