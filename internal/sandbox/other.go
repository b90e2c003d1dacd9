//go:build !(linux && (amd64 || arm64))

package sandbox

import (
	"context"
	"fmt"
	"os"
	"os/exec"
)

// Main does nothing: the sandbox needs Linux on amd64 or arm64.
func Main() {}

// Probe reports the sandbox unavailable: it needs Linux on amd64 or arm64.
func Probe() Report {
	return Report{Reason: "the sandbox needs Linux on amd64 or arm64"}
}

func initCommand(context.Context, config, []*os.File) (*exec.Cmd, error) {
	return nil, fmt.Errorf("%w: %s", ErrUnavailable, Probe().Reason)
}
