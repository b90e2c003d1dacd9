package main

import (
	"os/exec"
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
		{"fish", []string{"complete -c kagent", "-a 'optimize'", "-a 'generate'", "-a 'sweep'", "-a 'completion'", "-l max-rounds"}},
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
