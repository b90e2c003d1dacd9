package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kagent-dev/kagent/configs"
)

func configsCommand() *cli.Command {
	return &cli.Command{
		Name:  "configs",
		Usage: "list and show the configs --strategy can name",
		Subcommands: []*cli.Command{
			{
				Name:  "list",
				Usage: "list config names and where each comes from",
				Action: func(c *cli.Context) error {
					wd, _ := os.Getwd()
					list, err := configs.List(wd)
					if err != nil {
						return err
					}
					t := newTable(c.App.Writer)
					t.row("NAME", "STRATEGY", "PLATFORM", "SOURCE", "DESCRIPTION")
					for _, s := range list {
						cfg := configs.Default()
						strategy, plat := "?", "?"
						if err := configs.Apply(&cfg, s); err == nil {
							strategy, plat = cfg.Strategy, cfg.PlatformName()
							if plat == "" {
								plat = "auto"
							}
						}
						t.row(s.Name, strategy, plat, s.Path, firstComment(s.Data))
					}
					return t.flush()
				},
			},
			{
				Name:      "show",
				Usage:     "print a config's YAML",
				ArgsUsage: "NAME",
				Action: func(c *cli.Context) error {
					if c.NArg() != 1 {
						return usageError("configs show takes one config NAME (see `kagent configs list`)")
					}
					wd, _ := os.Getwd()
					s, err := configs.Resolve(wd, c.Args().First())
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "# %s\n%s", s.Path, s.Data)
					return nil
				},
			},
		},
	}
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
