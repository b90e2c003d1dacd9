package main

import (
	"io"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/suggest"
)

// The bash and zsh scripts ask kagent itself for the words that may come
// next (urfave/cli's --generate-bash-completion), so they follow every
// command and flag without being written again. The command line is run as
// typed words, never through eval, so completing a line runs nothing the
// line merely spells.
const bashCompletion = `# bash completion for kagent.
# Load it now:      source <(kagent completion bash)
# or for good:      kagent completion bash > ~/.local/share/bash-completion/completions/kagent
_kagent_complete() {
    local cur="${COMP_WORDS[COMP_CWORD]}"
    local -a line=("${COMP_WORDS[@]:0:COMP_CWORD}")
    local opts
    if [[ "$cur" == -* ]]; then
        opts=$("${line[@]}" "$cur" --generate-bash-completion 2>/dev/null)
    else
        opts=$("${line[@]}" --generate-bash-completion 2>/dev/null)
    fi
    local IFS=$'\n'
    COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -o bashdefault -o default -F _kagent_complete kagent
`

const zshCompletion = `#compdef kagent
# zsh completion for kagent.
# Load it now:      source <(kagent completion zsh)
# or for good:      kagent completion zsh > "${fpath[1]}/_kagent"
_kagent() {
  local -a opts
  local cur=${words[CURRENT]}
  if [[ "$cur" == -* ]]; then
    opts=("${(@f)$(${words[1,CURRENT-1]} $cur --generate-bash-completion 2>/dev/null)}")
  else
    opts=("${(@f)$(${words[1,CURRENT-1]} --generate-bash-completion 2>/dev/null)}")
  fi
  if [[ -n "${opts[1]}" ]]; then
    _describe 'kagent' opts
  else
    _files
  fi
}
if [[ "${funcstack[1]}" == "_kagent" ]]; then
  _kagent "$@"
else
  compdef _kagent kagent
fi
`

// The fish script asks kagent the same way: urfave/cli's own fish script
// matches subcommands by name anywhere on the line (so "list" and "show"
// of configs and runs mix) and turns off file completion for flags that
// take a path.
const fishCompletion = `# fish completion for kagent.
# Load it now:      kagent completion fish | source
# or for good:      kagent completion fish > ~/.config/fish/completions/kagent.fish
function __kagent_complete
    set -l line (commandline -opc)
    set -l cur (commandline -ct)
    set -l opts
    if string match -q -- '-*' "$cur"
        set opts ($line $cur --generate-bash-completion 2>/dev/null)
    else
        set opts ($line --generate-bash-completion 2>/dev/null)
    end
    if test (count $opts) -gt 0
        printf '%s\n' $opts
    else
        __fish_complete_path "$cur"
    end
end
complete -c kagent -f -a '(__kagent_complete)'
`

// shells are the shells `kagent completion` writes a script for.
var shells = []string{"bash", "zsh", "fish"}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "SHELL",
		Description: "Prints a script that completes kagent's commands and flags in SHELL:\n\n" +
			"  bash:  source <(kagent completion bash)\n" +
			"  zsh:   source <(kagent completion zsh)\n" +
			"  fish:  kagent completion fish | source\n\n" +
			"Put the line in ~/.bashrc, ~/.zshrc or ~/.config/fish/config.fish to load it in every shell.",
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return usageError("completion takes one SHELL: %s", configs.Words(shells, "or"))
			}
			return writeCompletion(c.App, c.App.Writer, c.Args().First())
		},
	}
}

// writeCompletion writes the completion script of one shell.
func writeCompletion(app *cli.App, w io.Writer, shell string) error {
	var script string
	switch shell {
	case "bash":
		script = bashCompletion
	case "zsh":
		script = zshCompletion
	case "fish":
		script = fishCompletion
	default:
		if s := suggest.Closest(shell, shells); s != "" {
			return usageError("completion: unknown shell %q; did you mean %q?", shell, s)
		}
		return usageError("completion: unknown shell %q: give %s", shell, configs.Words(shells, "or"))
	}
	_, err := io.WriteString(w, script)
	return err
}
