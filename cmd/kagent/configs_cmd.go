package main

import (
	"cmp"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/configs"
)

func configsCommand() *cli.Command {
	return &cli.Command{
		Name:  "configs",
		Usage: "list and show the configs --strategy can name",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list config names and where each comes from",
				Flags: []cli.Flag{jsonFlag()},
				Action: func(c *cli.Context) error {
					wd, _ := os.Getwd()
					list, err := configs.List(wd)
					if err != nil {
						return err
					}
					rows := make([]configRow, len(list))
					for i, s := range list {
						rows[i] = newConfigRow(s)
					}
					if c.Bool("json") {
						return writeJSON(c.App.Writer, rows)
					}
					t := newTable(c.App.Writer)
					t.row("NAME", "STRATEGY", "PLATFORM", "SOURCE", "DESCRIPTION")
					for _, r := range rows {
						t.row(r.Name, r.Strategy, r.Platform, r.Source, r.Description)
					}
					return t.flush()
				},
			},
			{
				Name:      "show",
				Usage:     "print a config's YAML",
				ArgsUsage: "NAME",
				Flags:     []cli.Flag{jsonFlag()},
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError("configs show takes one config NAME (see `kagent configs list`)")
					}
					wd, _ := os.Getwd()
					s, err := configs.Resolve(wd, c.Args().First())
					if err != nil {
						return err
					}
					if c.Bool("json") {
						return showConfigJSON(c.App.Writer, s)
					}
					fmt.Fprintf(c.App.Writer, "# %s\n%s", s.Path, s.Data)
					return nil
				},
			},
		},
	}
}

// configRow is one config of `configs list`; --json prints these.
type configRow struct {
	Name string `json:"name"`
	// Strategy and Platform are what the config sets ("?" where it does not
	// load, platform "auto" where it leaves the platform to detection).
	Strategy    string `json:"strategy"`
	Platform    string `json:"platform"`
	Source      string `json:"source"` // "embedded:strategies/NAME.yaml" or a file path
	Description string `json:"description"`
}

func newConfigRow(s configs.Source) configRow {
	r := configRow{Name: s.Name, Strategy: "?", Platform: "?", Source: s.Path, Description: firstComment(s.Data)}
	cfg := configs.Default()
	if err := configs.Apply(&cfg, s); err == nil {
		r.Strategy, r.Platform = cfg.Strategy, cmp.Or(cfg.PlatformName(), "auto")
	}
	return r
}

// showConfigJSON prints a config as `configs show --json`: where it comes
// from, its YAML as written, and the configuration it makes (the file over
// the defaults; no environment, no flags) under the YAML's key names.
func showConfigJSON(w io.Writer, s configs.Source) error {
	cfg := configs.Default()
	if err := configs.Apply(&cfg, s); err != nil {
		return err
	}
	data, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("configs show %s: %w", s.Name, err)
	}
	var settings map[string]any
	if err := yaml.Unmarshal(data, &settings); err != nil {
		return fmt.Errorf("configs show %s: %w", s.Name, err)
	}
	return writeJSON(w, struct {
		Name        string         `json:"name"`
		Source      string         `json:"source"`
		Description string         `json:"description"`
		YAML        string         `json:"yaml"`
		Config      map[string]any `json:"config"`
	}{s.Name, s.Path, firstComment(s.Data), string(s.Data), settings})
}

// firstComment returns the first comment line of a YAML file, for listings.
func firstComment(data []byte) string {
	for _, line := range strings.Split(string(data), "\n") {
		if s, ok := strings.CutPrefix(strings.TrimSpace(line), "#"); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}
