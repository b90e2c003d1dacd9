package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// KernelAgent reads its settings from a .env file in the working folder.
// kagent takes from it what a run can use, as the variables kagent reads:
// the LLM keys as they are, OPENAI_MODEL as KAGENT_LLM_MODEL and
// OPENAI_BASE_URL as KAGENT_LLM_BASE_URL. A variable already in the
// environment wins over the file, and no value is ever printed. The rest of
// the file is named in one warning line, with what to use instead where
// kagent has an equivalent.

// dotEnvFile is the file read from the working folder.
const dotEnvFile = ".env"

// dotEnvMaxBytes bounds the file read; a larger one is not read.
const dotEnvMaxBytes = 1 << 20

// dotEnvRenamed are the .env keys kagent reads under its own name.
var dotEnvRenamed = map[string]string{
	"OPENAI_MODEL":    "KAGENT_LLM_MODEL",
	"OPENAI_BASE_URL": "KAGENT_LLM_BASE_URL",
}

// dotEnvInstead says what to use for the KernelAgent keys kagent does not read.
var dotEnvInstead = map[string]string{
	"NUM_KERNEL_SEEDS":      "kagent generate --seeds",
	"MAX_REFINEMENT_ROUNDS": "refine_attempts in a config",
	"LOG_LEVEL":             "--log-level",
}

// llmKeyVar reports whether a variable holds an LLM credential that .env
// may supply: any NAME_API_KEY (the name llm.api_key_env may give) and
// Bedrock's AWS variables.
func llmKeyVar(name string) bool {
	return strings.HasSuffix(name, "_API_KEY") || slices.Contains([]string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION",
	}, name)
}

// dotEnvCommands are the commands that read .env: those that ask an LLM and
// those that report the LLM settings.
var dotEnvCommands = []string{"optimize", "generate", "sweep", "doctor", "env"}

// readDotEnv is the Before of dotEnvCommands.
func readDotEnv(c *cli.Context) error {
	taken, kept, notRead := loadDotEnv(dotEnvFile, os.Environ(), os.Setenv)
	if len(taken) > 0 || len(kept) > 0 {
		msg := "took " + orNone(taken)
		if len(kept) > 0 {
			msg += "; kept from the environment: " + strings.Join(kept, ", ")
		}
		fmt.Fprintf(c.App.ErrWriter, "kagent: %s: %s\n", dotEnvFile, msg)
	}
	if len(notRead) > 0 {
		fmt.Fprintf(c.App.ErrWriter, "kagent: warning: %s: not read: %s\n", dotEnvFile, strings.Join(notRead, ", "))
	}
	return nil
}

// loadDotEnv sets from the .env file at path every variable kagent takes
// that environ (NAME=VALUE entries) does not hold, and returns what it took
// ("OPENAI_MODEL (as KAGENT_LLM_MODEL)"), what the environment held
// already, and what it did not read: names with notes, never a value.
func loadDotEnv(path string, environ []string, set func(string, string) error) (taken, kept, notRead []string) {
	entries, bad, err := readDotEnvFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, []string{"the file (" + err.Error() + ")"}
	}
	inEnv := map[string]bool{}
	// A .env must not send the environment's keys to a server of its choice.
	envHoldsKeys := false
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		inEnv[name] = true
		envHoldsKeys = envHoldsKeys || llmKeyVar(name)
	}
	for _, e := range entries {
		target, renamed := dotEnvRenamed[e.key]
		switch {
		case renamed:
		case llmKeyVar(e.key):
			target = e.key
		default:
			if hint, ok := dotEnvInstead[e.key]; ok {
				notRead = append(notRead, e.key+" (use "+hint+")")
			} else {
				notRead = append(notRead, e.key)
			}
			continue
		}
		switch {
		case inEnv[e.key]:
			kept = append(kept, e.key)
		case inEnv[target]:
			kept = append(kept, target+" (over "+e.key+")")
		case e.key == "OPENAI_BASE_URL" && envHoldsKeys:
			notRead = append(notRead, e.key+" (the environment holds LLM keys; set KAGENT_LLM_BASE_URL to send them there)")
		default:
			if err := set(target, e.value); err != nil {
				notRead = append(notRead, e.key+" ("+err.Error()+")")
				continue
			}
			if renamed {
				taken = append(taken, e.key+" (as "+target+")")
			} else {
				taken = append(taken, e.key)
			}
		}
	}
	for _, n := range bad {
		notRead = append(notRead, fmt.Sprintf("line %d (not KEY=VALUE)", n))
	}
	return taken, kept, notRead
}

type dotEnvEntry struct{ key, value string }

var dotEnvKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// readDotEnvFile reads KEY=VALUE lines as python-dotenv writes them:
// comments (#), blank lines, "export KEY=VALUE", values in single quotes
// (literal), double quotes (\n, \", \\ escapes) or bare (up to " #"). A key
// given twice keeps its last value, in the place of its first. bad lists
// the numbers of the lines that are none of these.
func readDotEnvFile(path string) (entries []dotEnvEntry, bad []int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, nil, err
	} else if !st.Mode().IsRegular() {
		return nil, nil, fmt.Errorf("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, dotEnvMaxBytes+1))
	if err != nil {
		return nil, nil, err
	}
	if len(data) > dotEnvMaxBytes {
		return nil, nil, fmt.Errorf("over %d bytes", dotEnvMaxBytes)
	}
	index := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		key = strings.TrimSpace(key)
		if v, okv := dotEnvValue(strings.TrimSpace(value)); ok && okv && dotEnvKey.MatchString(key) {
			if j, seen := index[key]; seen {
				entries[j].value = v
			} else {
				index[key] = len(entries)
				entries = append(entries, dotEnvEntry{key, v})
			}
			continue
		}
		bad = append(bad, i+1)
	}
	return entries, bad, nil
}

// dotEnvValue reads a value: quoted, or bare up to an inline comment.
func dotEnvValue(s string) (string, bool) {
	switch {
	case strings.HasPrefix(s, "'"):
		v, rest, ok := strings.Cut(s[1:], "'")
		return v, ok && trailingComment(rest)
	case strings.HasPrefix(s, `"`):
		var b strings.Builder
		for i := 1; i < len(s); i++ {
			switch c := s[i]; {
			case c == '"':
				return b.String(), trailingComment(s[i+1:])
			case c == '\\' && i+1 < len(s):
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case '"', '\\':
					b.WriteByte(s[i])
				default:
					b.WriteByte('\\')
					b.WriteByte(s[i])
				}
			default:
				b.WriteByte(c)
			}
		}
		return "", false // no closing quote
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s), true
}

// trailingComment reports whether what follows a quoted value is nothing
// or a comment.
func trailingComment(rest string) bool {
	rest = strings.TrimSpace(rest)
	return rest == "" || strings.HasPrefix(rest, "#")
}
