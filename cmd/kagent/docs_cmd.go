package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
)

func docsCommand() *cli.Command {
	return &cli.Command{
		Name:  "docs",
		Usage: "write kagent's reference (every command and flag) as a man page or Markdown",
		Description: "--man DIR writes DIR/kagent.1 (read it with man DIR/kagent.1, or install it under a man1\n" +
			"folder of your MANPATH); --markdown DIR writes DIR/kagent.md. Both are made from the same\n" +
			"definitions as --help, so they match this binary.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "man", Usage: "write the man page kagent.1 into `DIR`"},
			&cli.StringFlag{Name: "markdown", Usage: "write the Markdown reference kagent.md into `DIR`"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usageError("docs takes no arguments: give --man DIR or --markdown DIR")
			}
			if c.String("man") == "" && c.String("markdown") == "" {
				return usageError("docs: give --man DIR, --markdown DIR or both")
			}
			docs := []struct {
				dir, file string
				render    func() (string, error)
			}{
				{c.String("man"), "kagent.1", func() (string, error) { return c.App.ToManWithSection(1) }},
				{c.String("markdown"), "kagent.md", c.App.ToMarkdown},
			}
			for _, d := range docs {
				if d.dir == "" {
					continue
				}
				text, err := d.render()
				if err != nil {
					return fmt.Errorf("docs %s: %w", d.file, err)
				}
				if err := os.MkdirAll(d.dir, 0o755); err != nil {
					return fmt.Errorf("docs: %w", err)
				}
				path := filepath.Join(d.dir, d.file)
				if err := atomicfile.Write(path, []byte(text), 0o644); err != nil {
					return fmt.Errorf("docs: %w", err)
				}
				fmt.Fprintln(c.App.Writer, path)
			}
			return nil
		},
	}
}
