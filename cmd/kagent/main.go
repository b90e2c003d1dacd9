// Command kagent makes Triton GPU kernels faster: it profiles a kernel, asks an
// LLM to diagnose and rewrite it, verifies every rewrite against PyTorch, times
// it and keeps the fastest correct one.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kagent-kernels/kagent/internal/sandbox"
	"github.com/kagent-kernels/kagent/platform/all"
)

func main() {
	sandbox.Main() // runs a sandbox's init when kagent was started as one
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	app := newApp()
	err := app.RunContext(ctx, interleaved(app, os.Args))
	stop()
	all.Shutdown()
	os.Exit(report(os.Stderr, err))
}
