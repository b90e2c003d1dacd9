package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/internal/suggest"
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
	// urfave/cli reads the shell completion request only as the last word.
	if complete := "--" + cli.BashCompletionFlag.Names()[0]; args[len(args)-1] == complete {
		return append(interleaved(app, args[:len(args)-1]), complete)
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
// An unknown flag names the closest one the command takes (its own or a
// global flag) when one is close.
func usageErrors(app *cli.App, cmds []*cli.Command, parents string) {
	for _, c := range cmds {
		full := strings.TrimSpace(parents + " " + c.Name)
		flags := append(slices.Clone(c.Flags), app.Flags...)
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
			if msg, ok := unknownFlag(err, flags, "kagent "+full+" --help"); ok {
				return usageError("%s: %s", full, msg)
			}
			if msg, ok := badFlagValue(err, flags); ok {
				return usageError("%s: %s (see kagent %s --help)", full, msg, full)
			}
			return usageError("%s: %v (see kagent %s --help)", full, err, full)
		}
		usageErrors(app, c.Subcommands, full)
	}
}

// unknownFlag rewrites the flag package's "flag provided but not defined:
// -name" as "unknown flag --name", followed by the closest of flags when
// one is close, else by the help to read.
func unknownFlag(err error, flags []cli.Flag, help string) (string, bool) {
	name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: ")
	if !ok {
		return "", false
	}
	name = strings.TrimLeft(name, "-")
	var names []string
	for _, f := range append(flags, cli.HelpFlag) {
		names = append(names, f.Names()...)
	}
	msg := "unknown flag " + dashed(name)
	if s := suggest.Closest(name, names); s != "" {
		return msg + "; did you mean " + dashed(s) + "?", true
	}
	return msg + " (see " + help + ")", true
}

// flagValueError is the flag package's message for a value it cannot parse.
var flagValueError = regexp.MustCompile(`^invalid (?:boolean )?value (".*") for (?:flag )?-+([^:\s]+): (.*)$`)

// badFlagValue rewrites the flag package's "invalid value "x" for flag
// -name: parse error" as "--name: "x" is not a whole number", naming what
// the flag takes.
func badFlagValue(err error, flags []cli.Flag) (string, bool) {
	m := flagValueError.FindStringSubmatch(err.Error())
	if m == nil {
		return "", false
	}
	value, name, why := m[1], m[2], m[3]
	want := ""
	for _, f := range flags {
		if !slices.Contains(f.Names(), name) {
			continue
		}
		switch f.(type) {
		case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag:
			want = "a whole number"
		case *cli.Float64Flag:
			want = "a number"
		case *cli.DurationFlag:
			want = "a duration such as 90s, 5m or 1h30m"
		case *cli.BoolFlag:
			want = "true or false"
		}
	}
	if want == "" || (why != "parse error" && !strings.Contains(why, "invalid syntax")) {
		return fmt.Sprintf("%s: invalid value %s: %s", dashed(name), value, why), true
	}
	return fmt.Sprintf("%s: %s is not %s", dashed(name), value, want), true
}

// dashed writes a flag name as it is typed: -k, --kernel-dir.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// commandNotFound reports an unknown command (or subcommand) in one line,
// naming the closest one when one is close, and exits with ExitUsage.
func commandNotFound(c *cli.Context, name string) {
	parent := strings.TrimSpace(strings.TrimPrefix(c.Command.HelpName, c.App.Name))
	var names []string
	for _, sub := range c.Command.Subcommands {
		if !sub.Hidden {
			names = append(names, sub.Names()...)
		}
	}
	typed := strings.TrimSpace(parent + " " + name)
	msg := fmt.Sprintf("unknown command %q", typed)
	if s := suggest.Closest(name, names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", strings.TrimSpace(parent+" "+s))
	} else {
		msg += " (see " + strings.TrimSpace("kagent "+parent) + " --help)"
	}
	fmt.Fprintln(c.App.ErrWriter, "kagent: "+msg)
	os.Exit(ExitUsage)
}
