package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/roofline"
)

// specsCommand is `kagent specs [NAME] [--json] [--specs-file FILE]`: the
// GPU specs database as a table, or one GPU in detail.
func specsCommand() *cli.Command {
	return &cli.Command{
		Name:      "specs",
		Usage:     "show the GPU specs database, or one GPU in detail",
		ArgsUsage: "[NAME]",
		Description: "Without NAME, prints every known GPU with its dense peak rates (TFLOP/s), memory\n" +
			"bandwidth, memory and L2. With NAME (a torch device name such as \"NVIDIA H200\", or a\n" +
			"short form such as h200), prints that GPU's entry. Figures marked † could not be\n" +
			"confirmed by a stored source. --specs-file adds or overrides entries from YAML.",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print JSON"},
			&cli.StringFlag{Name: "specs-file", Usage: "YAML `FILE` of extra or overriding GPU specs", EnvVars: []string{"KAGENT_SPECS_FILE"}},
		},
		Action: func(c *cli.Context) error {
			db := roofline.Default()
			if f := c.String("specs-file"); f != "" {
				var err error
				if db, err = db.LoadOverrides(f); err != nil {
					return usageError("%w", err)
				}
			}
			w := c.App.Writer
			name := strings.TrimSpace(strings.Join(c.Args().Slice(), " "))
			if name == "" {
				all := db.All()
				if c.Bool("json") {
					return writeSpecsJSON(c, all)
				}
				return roofline.WriteTable(w, all)
			}
			s, err := db.Lookup(name)
			if err != nil {
				return usageError("%w", err)
			}
			if c.Bool("json") {
				return writeSpecsJSON(c, s)
			}
			return roofline.WriteDetail(w, s)
		},
	}
}

func writeSpecsJSON(c *cli.Context, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode specs: %w", err)
	}
	_, err = fmt.Fprintln(c.App.Writer, string(b))
	return err
}
