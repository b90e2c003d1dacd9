package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// placeholder is what a flag's help may show for its value: urfave/cli's
// "value", or the first back-quoted text of the usage string, which must be
// a word in upper case (or i/n); a back-quoted command in a usage string
// would show as the placeholder.
var placeholder = regexp.MustCompile("^(value|[A-Z][A-Z_]*|i/n)$")

// TestFlagUsage checks every flag of every command: its placeholder is a
// word such as FILE, and the flags that only mean something to a run (the
// search's and the LLM's) are on the commands that run one.
func TestFlagUsage(t *testing.T) {
	runOnly := []string{"max-rounds", "num-workers", "llm-model", "llm-provider", "llm-base-url"}
	takes := map[string][]string{
		"optimize": runOnly,
		"sweep":    runOnly,
		"generate": {"llm-model", "llm-provider", "llm-base-url"},
		"eval":     nil,
		"profile":  nil,
	}
	var walk func(cmds []*cli.Command, parent string)
	walk = func(cmds []*cli.Command, parent string) {
		for _, c := range cmds {
			full := strings.TrimSpace(parent + " " + c.Name)
			for _, f := range c.Flags {
				// "--strategy NAME, -s NAME\tconfig NAME: ..."
				names, _, _ := strings.Cut(f.String(), "\t")
				for _, spelling := range strings.Split(names, ", ") {
					if w := strings.Fields(spelling); len(w) > 1 && !placeholder.MatchString(w[1]) {
						t.Errorf("%s: help shows %q (back quotes in the usage?)", full, names)
						break
					}
				}
			}
			if want, ok := takes[full]; ok {
				for _, name := range runOnly {
					has := findFlag(c.Flags, "--"+name) != nil
					if has != slices.Contains(want, name) {
						t.Errorf("%s: has --%s = %v", full, name, has)
					}
				}
			}
			walk(c.Subcommands, full)
		}
	}
	walk(newApp().Commands, "")
}

// TestHelp: the real binary's help shows the placeholders, and a flag a
// command does not take is a usage error.
func TestHelp(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args      []string
		want, not []string
	}{
		{[]string{"optimize", "--help"}, []string{"--strategy NAME, -s NAME", "--config FILE", "--kernel-dir DIR", "--max-rounds value", "--llm-model value"}, []string{"kagent configs list,"}},
		{[]string{"eval", "--help"}, []string{"--strategy NAME", "--platform value"}, []string{"--max-rounds", "--num-workers", "--llm-"}},
		{[]string{"profile", "--help"}, []string{"--strategy NAME", "--size value"}, []string{"--max-rounds", "--num-workers", "--llm-"}},
		{[]string{"generate", "--help"}, []string{"--llm-model value"}, []string{"--max-rounds", "--num-workers"}},
	} {
		r := run(t, dir, tc.args...)
		if r.code != 0 {
			t.Errorf("%v: exit %d: %s", tc.args, r.code, r.stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%v: help lacks %q:\n%s", tc.args, w, r.stdout)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(r.stdout, n) {
				t.Errorf("%v: help holds %q:\n%s", tc.args, n, r.stdout)
			}
		}
	}
	oneLineError(t, run(t, dir, "eval", "--kernel-dir", ".", "--max-rounds", "3"), ExitUsage, "eval: unknown flag --max-rounds")
}

// TestDocs: docs writes the man page and the Markdown reference, each with
// every command.
func TestDocs(t *testing.T) {
	dir := t.TempDir()
	man, md := filepath.Join(dir, "man", "man1"), filepath.Join(dir, "md")
	r := run(t, dir, "docs", "--man", man, "--markdown", md)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, tc := range []struct {
		path string
		want []string
	}{
		{filepath.Join(man, "kagent.1"), []string{`.TH kagent 1`, "optimize", "completion", `\fB--max-rounds\fP`}},
		{filepath.Join(md, "kagent.md"), []string{"# NAME", "## optimize", "## eval", "## completion", "## docs", "**--max-rounds**"}},
	} {
		b, err := os.ReadFile(tc.path)
		if err != nil {
			t.Fatalf("docs did not write %s: %v", tc.path, err)
		}
		if !strings.Contains(r.stdout, tc.path) {
			t.Errorf("stdout does not name %s: %q", tc.path, r.stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(string(b), w) {
				t.Errorf("%s lacks %q", tc.path, w)
			}
		}
	}
	oneLineError(t, run(t, dir, "docs"), ExitUsage, "give --man DIR, --markdown DIR or both")
}
