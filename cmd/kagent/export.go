package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/export"
	"github.com/kagent-kernels/kagent/kerneldir"
)

func exportCommand() *cli.Command {
	return &cli.Command{
		Name:  "export",
		Usage: "ship a verified kernel: a Hugging Face kernel-builder project, a model patch module, a KernelBench ModelNew",
		Description: "Exports the promoted best kernel of RUN (default: the latest finished run of the kernel dir with\n" +
			"one), or --kernel FILE for the problem --problem FILE, to --out DIR: hf/ (kernel-builder project with a\n" +
			"torch op, README with the run's measurements, tests), patch/ (kagent_patch_NAME.py: patch(model),\n" +
			"unpatch(model)), kernelbench/ (ModelNew) and export.json. DIR is written whole or not at all.",
		ArgsUsage: "[RUN]",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "kernel-dir", Aliases: []string{"k"}, Value: ".", Usage: "kernel `DIR` whose run history to export from"},
			&cli.StringFlag{Name: "db", Usage: "run history `FILE` (default: KERNEL_DIR/.kagent/history.db)"},
			&cli.StringFlag{Name: "kernel", Usage: "export this kernel `FILE` instead of a run's best (needs --problem)"},
			&cli.StringFlag{Name: "problem", Usage: "the problem.py `FILE` of --kernel (its kagent.yaml, if any, is read beside it)"},
			&cli.StringFlag{Name: "format", Value: "all", Usage: "the `FORMAT` to write: hf, patch, kernelbench or all"},
			&cli.StringFlag{Name: "out", Usage: "the output `DIR` (must not exist or be empty)"},
			&cli.BoolFlag{Name: "force", Usage: "replace a non-empty --out"},
			&cli.BoolFlag{Name: "json", Usage: "print the manifest (export.json) as JSON"},
		},
		Action: func(c *cli.Context) error {
			o, err := exportOptionsFrom(c)
			if err != nil {
				return err
			}
			return runExport(c.Context, c.App.Writer, o)
		},
	}
}

// exportOptions are export's flags, checked.
type exportOptions struct {
	KernelDir string
	DB        string
	Run       string // "" = the latest finished run with a promoted best
	Kernel    string // with Problem: export this file, not a run's best
	Problem   string
	Formats   []export.Format
	Out       string
	Force     bool
	JSON      bool
}

func exportOptionsFrom(c *cli.Context) (exportOptions, error) {
	o := exportOptions{KernelDir: c.String("kernel-dir"), DB: c.String("db"), Kernel: c.String("kernel"), Problem: c.String("problem"),
		Out: c.String("out"), Force: c.Bool("force"), JSON: c.Bool("json")}
	switch {
	case c.NArg() > 1:
		return o, usageError("export: give at most one RUN id (see kagent runs list)")
	case o.Out == "":
		return o, usageError("export: give --out DIR, the folder to write")
	case o.Kernel != "" && o.Problem == "":
		return o, usageError("export: --kernel needs --problem FILE, the problem.py it solves")
	case o.Kernel == "" && o.Problem != "":
		return o, usageError("export: --problem goes with --kernel FILE")
	case o.Kernel != "" && c.NArg() == 1:
		return o, usageError("export: give a RUN or --kernel FILE, not both")
	}
	o.Run = c.Args().First()
	f, err := export.ParseFormat(c.String("format"))
	if err != nil {
		return o, usageError("export: --format %q: give hf, patch, kernelbench or all", c.String("format"))
	}
	o.Formats = f
	return o, nil
}

func runExport(ctx context.Context, w io.Writer, o exportOptions) error {
	var k *export.Kernel
	var err error
	if o.Kernel != "" {
		k, err = export.FromFiles(o.Kernel, o.Problem)
	} else {
		db := ""
		if o.DB != "" {
			db = absPath(o.DB)
		}
		k, err = export.FromRun(ctx, absPath(o.KernelDir), db, o.Run)
	}
	if err != nil {
		return exportError(err)
	}
	m, err := export.Write(ctx, k, export.Options{Out: o.Out, Formats: o.Formats, Force: o.Force, Version: readVersion().Version})
	if err != nil {
		return exportError(err)
	}
	if o.JSON {
		return writeJSON(w, m)
	}
	fmt.Fprintf(w, "exported %s (%s) to %s\n", m.Name, m.Origin, m.Out)
	for _, f := range m.Formats {
		fmt.Fprintf(w, "  %-12s %s\n", f, filepath.Join(m.Out, string(f)))
	}
	fmt.Fprintf(w, "  %-12s %s\n", "manifest", filepath.Join(m.Out, export.ManifestFile))
	return nil
}

// exportError gives bad input the usage exit code.
func exportError(err error) error {
	if errors.Is(err, export.ErrInvalid) || errors.Is(err, kerneldir.ErrInvalid) {
		return withCode(ExitUsage, err)
	}
	return err
}
