package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// interleaved reorders a command line so that flags may come anywhere, as
// gh, kubectl and argparse allow: urfave/cli stops reading a command's flags
// at its first argument, so the flags given after the arguments move in
// front of them, and the app's global flags (--log-level) given after the
// command move in front of the command. Everything after "--" stays an
// argument; an unknown flag moves with the flags, for the parser to report.
func interleaved(app *cli.App, args []string) []string {
	if len(args) < 2 {
		return args
	}
	var globals, path, flags, positional []string
	i := 1
	take := func(fs []cli.Flag, dst *[]string) bool {
		f := findFlag(fs, args[i])
		if f == nil {
			return false
		}
		n := 1
		if takesValue(f, args[i]) && i+1 < len(args) {
			n = 2
		}
		*dst = append(*dst, args[i:i+n]...)
		i += n
		return true
	}
	for i < len(args) && isFlag(args[i]) && take(app.Flags, &globals) {
	}
	var cmd *cli.Command
	for cmds := app.Commands; i < len(args); {
		c := findCommand(cmds, args[i])
		if c == nil {
			break
		}
		path = append(path, args[i])
		cmd, cmds = c, c.Subcommands
		i++
	}
	if cmd == nil {
		return args
	}
	for i < len(args) {
		a := args[i]
		switch {
		case a == "--":
			positional = append(positional, args[i:]...)
			i = len(args)
		case !isFlag(a):
			positional = append(positional, a)
			i++
		case take(cmd.Flags, &flags), take(app.Flags, &globals):
		default:
			flags = append(flags, a)
			i++
		}
	}
	out := append([]string{args[0]}, globals...)
	out = append(out, path...)
	out = append(out, flags...)
	return append(out, positional...)
}

func isFlag(a string) bool { return strings.HasPrefix(a, "-") && a != "-" && a != "--" }

// findFlag is the flag a command-line word names (-n, --name, --name=value).
func findFlag(fs []cli.Flag, word string) cli.Flag {
	name, _, _ := strings.Cut(strings.TrimLeft(word, "-"), "=")
	for _, f := range fs {
		for _, n := range f.Names() {
			if n == name {
				return f
			}
		}
	}
	return nil
}

// takesValue says whether the flag reads the next word as its value.
func takesValue(f cli.Flag, word string) bool {
	if strings.Contains(word, "=") {
		return false
	}
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}

// usageErrors makes every command report a flag mistake as kagent does: one
// line, exit code 2, no help on stdout (urfave/cli prints the command's
// help and returns a plain error unless the command has its own handler).
func usageErrors(cmds []*cli.Command, parents string) {
	for _, c := range cmds {
		full := strings.TrimSpace(parents + " " + c.Name)
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			return usageError("%s: %v (see kagent %s --help)", full, err, full)
		}
		usageErrors(c.Subcommands, full)
	}
}
