package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/ui"
)

func uiCommand() *cli.Command {
	return &cli.Command{
		Name:    "ui",
		Aliases: []string{"serve"},
		Usage:   "serve a read-only local web view of the run history and sweeps",
		Description: "Serves pages over the run histories of the kernel dirs (DIR/.kagent/history.db) and the sweep dirs\n" +
			"given: the runs, each run's rounds and candidates with verdicts, timings, diffs, prompts, replies and\n" +
			"plots, updated live while a run goes, and each sweep's problems and fast_p. It only reads: histories are\n" +
			"opened read-only and every method but GET and HEAD is refused. It listens on 127.0.0.1 unless --addr\n" +
			"names another address, prints the URL it serves on one line, and stops on SIGINT or SIGTERM\n" +
			"(pages and security: docs/ui.md).\n\n" +
			"Exit codes: 2 bad flags or a missing dir, 1 the server failed, 130 stopped by SIGINT or SIGTERM.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "addr", Usage: "listen on `ADDR`, a HOST:PORT (default 127.0.0.1:8080, or 127.0.0.1:PORT with --port)"},
			&cli.IntFlag{Name: "port", Value: 8080, Usage: "listen on `PORT` of 127.0.0.1 (0: any free port)"},
			&cli.StringSliceFlag{Name: "kernel-dir", Aliases: []string{"k"}, Usage: "kernel `DIR` whose run history to show (repeatable; default: . when no --sweep)"},
			&cli.StringSliceFlag{Name: "sweep", Usage: "sweep `DIR` to show (repeatable)"},
			&cli.BoolFlag{Name: "json", Usage: "print the URL as JSON ({\"url\": ...})"},
		},
		Action: func(c *cli.Context) error {
			o, err := uiOptions(c)
			if err != nil {
				return err
			}
			return runUI(c.Context, o, c.App.Writer, c.App.ErrWriter)
		},
	}
}

// uiOpts is a resolved `kagent ui` command line.
type uiOpts struct {
	Addr string
	JSON bool
	ui.Options
}

// uiOptions reads the flags of `kagent ui`.
func uiOptions(c *cli.Context) (uiOpts, error) {
	o := uiOpts{Addr: c.String("addr"), JSON: c.Bool("json")}
	port := c.Int("port")
	switch {
	case o.Addr != "" && c.IsSet("port"):
		return o, usageError("ui: give --addr or --port, not both")
	case port < 0 || port > 65535:
		return o, usageError("ui: --port %d: want 0 to 65535", port)
	case o.Addr == "":
		o.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	if _, _, err := net.SplitHostPort(o.Addr); err != nil {
		return o, usageError("ui: --addr %q: want HOST:PORT, e.g. 127.0.0.1:8080", o.Addr)
	}
	o.KernelDirs, o.Sweeps = c.StringSlice("kernel-dir"), c.StringSlice("sweep")
	if len(o.KernelDirs) == 0 && len(o.Sweeps) == 0 {
		o.KernelDirs = []string{"."}
	}
	o.Logger = logger(c)
	return o, nil
}

// runUI serves until ctx ends.
func runUI(ctx context.Context, o uiOpts, stdout, stderr io.Writer) error {
	srv, err := ui.New(o.Options)
	if errors.Is(err, ui.ErrNoDir) {
		return usageError("ui: %v (give an existing --kernel-dir or --sweep)", err)
	}
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", o.Addr)
	if err != nil {
		return usageError("ui: listen on %s: %v (give another --port, or --port 0 for a free one)", o.Addr, err)
	}
	if !ui.IsLoopback(o.Addr) {
		fmt.Fprintf(stderr, "kagent ui: warning: listening on %s, reachable from other machines: anyone who can connect sees the run history\n", ln.Addr())
	}
	url := "http://" + ln.Addr().String() + "/"
	if o.JSON {
		b, _ := json.Marshal(map[string]string{"url": url}) // one line, so a script can read it as it comes
		fmt.Fprintln(stdout, string(b))
	} else {
		fmt.Fprintf(stdout, "kagent ui: serving %s (read-only; Ctrl-C stops)\n", url)
	}
	if err := srv.Serve(ctx, ln); err != nil {
		return err
	}
	return ctx.Err()
}
