package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCompletion: each shell's script comes from the real binary; the bash
// one, sourced, completes commands, subcommands and flags by asking kagent.
func TestCompletion(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		shell string
		want  []string
	}{
		{"bash", []string{"_kagent_complete()", "complete -o bashdefault -o default -F _kagent_complete kagent"}},
		{"zsh", []string{"#compdef kagent", "compdef _kagent kagent", "--generate-bash-completion"}},
		{"fish", []string{"function __kagent_complete", "complete -c kagent -f -a '(__kagent_complete)'", "--generate-bash-completion"}},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			r := run(t, dir, "completion", tc.shell)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("script lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}
	oneLineError(t, run(t, dir, "completion", "tcsh"), ExitUsage, `unknown shell "tcsh": give bash, zsh or fish`)
	oneLineError(t, run(t, dir, "completion", "bsah"), ExitUsage, `did you mean "bash"?`)
	oneLineError(t, run(t, dir, "completion"), ExitUsage, "completion takes one SHELL")
}

// TestBashCompletion sources the bash script in bash and completes lines as
// a shell would: each case is the words typed, the last one being completed.
func TestBashCompletion(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, tc := range []struct {
		words []string
		want  string
	}{
		{[]string{"opt"}, "optimize"},
		{[]string{"configs", ""}, "list show"},
		{[]string{"optimize", "--max"}, "--max-rounds"},
		{[]string{"runs", "show", "R", "--js"}, "--json"}, // flags after an argument
		{[]string{"sweep", "st"}, "status"},
	} {
		script := `source <("$BIN" completion bash) || exit 1
declare -F _kagent_complete >/dev/null || { echo "no _kagent_complete"; exit 1; }
COMP_WORDS=("$BIN" "$@"); COMP_CWORD=$#
_kagent_complete
echo "${COMPREPLY[*]}"`
		cmd := exec.Command(bash, append([]string{"-c", script, "bash"}, tc.words...)...)
		cmd.Env = append(cmd.Environ(), "BIN="+binary)
		out, err := cmd.CombinedOutput()
		got := strings.TrimSpace(string(out))
		if err != nil || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%q: completed %q (%v), want %q", tc.words, got, err, tc.want)
		}
	}
}

// shellFor finds a shell for a completion test. It skips the test where the
// shell is missing, unless KAGENT_REQUIRE_TOOLS=1 (CI installs them).
func shellFor(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("KAGENT_REQUIRE_TOOLS") == "1" {
			t.Fatalf("KAGENT_REQUIRE_TOOLS=1 and no %s: %v", name, err)
		}
		t.Skipf("no %s", name)
	}
	return path
}

// TestZshCompletion loads the zsh script through the real completion system
// (compinit registers it for kagent) and runs its function on typed words.
// Only zsh's two display helpers are replaced, by ones that print what they
// were given: they need the line editor, which a test has not.
func TestZshCompletion(t *testing.T) {
	zsh := shellFor(t, "zsh")
	script := `autoload -U compinit && compinit -u -D
source <("$BIN" completion zsh) || exit 1
[[ ${_comps[kagent]} == _kagent ]] || { print -r -- "not registered: ${_comps[kagent]}"; exit 1 }
_describe() { print -rl -- "${(@P)2}" }
_files() { print -r -- "<files>" }
words=("$BIN" "$@"); CURRENT=${#words}
_kagent`
	for _, tc := range []struct {
		words []string
		want  []string
	}{
		{[]string{"opt"}, []string{"optimize", "sweep"}},
		{[]string{"configs", ""}, []string{"list", "show"}},
		{[]string{"optimize", "--max"}, []string{"--max-rounds"}},
		{[]string{"runs", "show", "R", "--js"}, []string{"--json"}},
		{[]string{"optimize", "--kernel-dir", "ex"}, []string{"<files>"}},
	} {
		cmd := exec.Command(zsh, append([]string{"-f", "-c", script, "zsh"}, tc.words...)...)
		cmd.Env = append(cmd.Environ(), "BIN="+binary, "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		got := strings.Fields(string(out))
		for _, w := range tc.want {
			if err != nil || !slices.Contains(got, w) {
				t.Errorf("%q: completed %q (%v), want %q among them", tc.words, got, err, w)
			}
		}
	}
}

// TestFishCompletion sources the fish script in fish and asks fish's own
// completion engine (complete -C) to complete lines as typed.
func TestFishCompletion(t *testing.T) {
	fish := shellFor(t, "fish")
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "kdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	// fish runs "kagent" as the line names it: put the binary on PATH as kagent.
	bin := filepath.Join(t.TempDir(), "kagent")
	if err := os.Symlink(binary, bin); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		line string
		want []string
		not  []string
	}{
		{"kagent opt", []string{"optimize"}, []string{"sweep"}},
		{"kagent configs ", []string{"list", "show"}, []string{"kdir/"}},
		{"kagent optimize --max", []string{"--max-rounds"}, nil},
		{"kagent runs show R --js", []string{"--json"}, nil},
		{"kagent sweep st", []string{"status"}, []string{"show"}},
		{"kagent optimize --kernel-dir k", []string{"kdir/"}, nil}, // a flag's path: files
	} {
		cmd := exec.Command(fish, "--no-config", "-c", `kagent completion fish | source; or exit 1; complete -C "$argv[1]"`, tc.line)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			got = append(got, strings.SplitN(l, "\t", 2)[0])
		}
		for _, w := range tc.want {
			if err != nil || !slices.Contains(got, w) {
				t.Errorf("%q: completed %q (%v), want %q among them", tc.line, got, err, w)
			}
		}
		for _, w := range tc.not {
			if slices.Contains(got, w) {
				t.Errorf("%q: completed %q, which should not include %q", tc.line, got, w)
			}
		}
	}
}
