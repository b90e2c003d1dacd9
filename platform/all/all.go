// Package all links every platform into a binary: import it for its side
// effects (`import _ "github.com/kagent-kernels/kagent/platform/all"`), and call
// Shutdown before the binary exits.
package all

import (
	// Each platform registers itself in its init.
	_ "github.com/kagent-kernels/kagent/platform/cpu"
	_ "github.com/kagent-kernels/kagent/platform/cuda"
	_ "github.com/kagent-kernels/kagent/platform/noop"
	_ "github.com/kagent-kernels/kagent/platform/rocm"
	_ "github.com/kagent-kernels/kagent/platform/xpu"

	"github.com/kagent-kernels/kagent/platform/worker"
)

// Shutdown ends what the linked platforms keep for the life of the process
// rather than of a session: the worker engine's fork servers and runner
// servers. Call it once no session is needed any more (a command calls it
// before it exits); they would also stop when the process exits, but
// Shutdown waits for them to remove their files.
func Shutdown() {
	worker.StopForkServers()
}
