// Command kagent makes Triton GPU kernels faster: it profiles a kernel, asks an
// LLM to diagnose and rewrite it, verifies every rewrite against PyTorch, times
// it and keeps the fastest correct one.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/kagent-dev/kagent/platform/all"
	"github.com/kagent-dev/kagent/platform/worker"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newApp().RunContext(ctx, os.Args)
	stop()
	worker.StopForkServers()
	os.Exit(report(os.Stderr, err))
}
