// Package all links every platform into a binary: import it for its side
// effects (`import _ "github.com/kagent-dev/kagent/platform/all"`).
package all

import (
	// Each platform registers itself in its init.
	_ "github.com/kagent-dev/kagent/platform/cpu"
	_ "github.com/kagent-dev/kagent/platform/cuda"
	_ "github.com/kagent-dev/kagent/platform/noop"
	_ "github.com/kagent-dev/kagent/platform/rocm"
	_ "github.com/kagent-dev/kagent/platform/xpu"
)
