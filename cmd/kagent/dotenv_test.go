package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestReadDotEnvFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	body := `# KernelAgent settings

OPENAI_API_KEY=sk-bare  # a comment
export ANTHROPIC_API_KEY="sk-\"quoted\"\\n"
OPENAI_MODEL='gpt #5'
EMPTY=
OPENAI_MODEL=gpt-5
no equals sign
BAD KEY=x
UNCLOSED="x
TRAILING='x' y
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	entries, bad, err := readDotEnvFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []dotEnvEntry{
		{"OPENAI_API_KEY", "sk-bare"},
		{"ANTHROPIC_API_KEY", `sk-"quoted"\n`},
		{"OPENAI_MODEL", "gpt-5"}, // the last value, in the first place
		{"EMPTY", ""},
	}
	if !slices.Equal(entries, want) {
		t.Errorf("entries %q, want %q", entries, want)
	}
	if !slices.Equal(bad, []int{8, 9, 10, 11}) {
		t.Errorf("bad lines %v, want 8 9 10 11", bad)
	}
	if _, _, err := readDotEnvFile(t.TempDir()); err == nil {
		t.Error("a folder named .env was read")
	}
}

func TestLoadDotEnv(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".env")
	body := "OPENAI_API_KEY=k1\nANTHROPIC_API_KEY=k2\nOPENAI_MODEL=m\nOPENAI_BASE_URL=u\nNUM_KERNEL_SEEDS=4\nCUDA_HOME=/cuda\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                 string
		environ              []string
		set                  []string // NAME=VALUE set, in order
		taken, kept, notRead []string
	}{
		{"empty environment", nil,
			[]string{"OPENAI_API_KEY=k1", "ANTHROPIC_API_KEY=k2", "KAGENT_LLM_MODEL=m", "KAGENT_LLM_BASE_URL=u"},
			[]string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_MODEL (as KAGENT_LLM_MODEL)", "OPENAI_BASE_URL (as KAGENT_LLM_BASE_URL)"},
			nil,
			[]string{"NUM_KERNEL_SEEDS (use kagent generate --seeds)", "CUDA_HOME"}},
		{"the environment wins", []string{"ANTHROPIC_API_KEY=e", "KAGENT_LLM_MODEL=e", "OPENAI_BASE_URL="},
			[]string{"OPENAI_API_KEY=k1"},
			[]string{"OPENAI_API_KEY"},
			[]string{"ANTHROPIC_API_KEY", "KAGENT_LLM_MODEL (over OPENAI_MODEL)", "OPENAI_BASE_URL"},
			[]string{"NUM_KERNEL_SEEDS (use kagent generate --seeds)", "CUDA_HOME"}},
		{"no base URL for the environment's keys", []string{"MY_RELAY_API_KEY=e"},
			[]string{"OPENAI_API_KEY=k1", "ANTHROPIC_API_KEY=k2", "KAGENT_LLM_MODEL=m"},
			[]string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_MODEL (as KAGENT_LLM_MODEL)"},
			nil,
			[]string{"OPENAI_BASE_URL (the environment holds LLM keys; set KAGENT_LLM_BASE_URL to send them there)", "NUM_KERNEL_SEEDS (use kagent generate --seeds)", "CUDA_HOME"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var set []string
			taken, kept, notRead := loadDotEnv(path, tc.environ, func(k, v string) error {
				set = append(set, k+"="+v)
				return nil
			})
			for _, c := range []struct {
				what      string
				got, want []string
			}{{"set", set, tc.set}, {"taken", taken, tc.taken}, {"kept", kept, tc.kept}, {"not read", notRead, tc.notRead}} {
				if !slices.Equal(c.got, c.want) {
					t.Errorf("%s: %q, want %q", c.what, c.got, c.want)
				}
			}
		})
	}
	if taken, kept, notRead := loadDotEnv(filepath.Join(t.TempDir(), ".env"), nil, nil); taken != nil || kept != nil || notRead != nil {
		t.Errorf("no .env: %q %q %q", taken, kept, notRead)
	}
}

// TestDotEnv runs the binary in a folder holding a KernelAgent .env: the
// commands that use LLM settings take its keys, model and base URL unless
// the environment has them, say which in one line and name the rest in one
// warning line, and never print a value.
func TestDotEnv(t *testing.T) {
	withEnv, without := t.TempDir(), t.TempDir()
	body := "# KernelAgent\nOPENAI_API_KEY=sk-dotenv-secret\nexport ANTHROPIC_API_KEY=\"sk-ant-dotenv-secret\"\n" +
		"OPENAI_MODEL=gpt-dotenv  # the model\nOPENAI_BASE_URL=http://relay.invalid:8000/v1\n" +
		"NUM_KERNEL_SEEDS=4\nMAX_REFINEMENT_ROUNDS=10\nCUDA_HOME=/usr/local/cuda\nnot a setting\n"
	if err := os.WriteFile(filepath.Join(withEnv, ".env"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	// Start from an environment without LLM settings of its own.
	clean := []string{"OPENAI_MODEL", "OPENAI_BASE_URL"}
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); llmKeyVar(name) {
			clean = append(clean, name)
		}
	}
	took := "kagent: .env: took OPENAI_API_KEY, ANTHROPIC_API_KEY, OPENAI_MODEL (as KAGENT_LLM_MODEL), OPENAI_BASE_URL (as KAGENT_LLM_BASE_URL)\n"
	notRead := "kagent: warning: .env: not read: NUM_KERNEL_SEEDS (use kagent generate --seeds), MAX_REFINEMENT_ROUNDS (use refine_attempts in a config), CUDA_HOME, line 9 (not KEY=VALUE)\n"
	for _, tc := range []struct {
		name     string
		dir      string
		env      []string
		args     []string
		stdout   []string
		notOut   []string
		stderr   string // exactly
		contains string // or containing this
	}{
		{"taken", withEnv, nil, []string{"env"},
			[]string{"gpt-dotenv", "http://relay.invalid:8000/v1"}, nil, took + notRead, ""},
		{"keys set for the run", withEnv, nil, []string{"doctor", "--python", filepath.Join(without, "no-python")},
			[]string{"set: OPENAI_API_KEY, ANTHROPIC_API_KEY;"}, nil, took + notRead, ""},
		{"the environment wins", withEnv, []string{"ANTHROPIC_API_KEY=sk-env-secret", "KAGENT_LLM_MODEL=env-model"}, []string{"env"},
			[]string{"env-model"}, []string{"gpt-dotenv", "relay.invalid"}, "",
			"kagent: .env: took OPENAI_API_KEY; kept from the environment: ANTHROPIC_API_KEY, KAGENT_LLM_MODEL (over OPENAI_MODEL)\n" +
				"kagent: warning: .env: not read: OPENAI_BASE_URL (the environment holds LLM keys; set KAGENT_LLM_BASE_URL to send them there), NUM_KERNEL_SEEDS"},
		{"a command that does not read it", withEnv, nil, []string{"version"}, []string{"kagent "}, nil, "", ""},
		{"no .env", without, nil, []string{"env"}, []string{"KAGENT_LLM_MODEL"}, []string{"gpt-dotenv"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runEnv(t, tc.dir, append(slices.Clone(clean), tc.env...), tc.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if tc.contains != "" {
				if !strings.Contains(r.stderr, tc.contains) || strings.Count(r.stderr, "\n") != 2 {
					t.Errorf("stderr %q, want two lines with %q", r.stderr, tc.contains)
				}
			} else if r.stderr != tc.stderr {
				t.Errorf("stderr %q, want %q", r.stderr, tc.stderr)
			}
			for _, w := range tc.stdout {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("stdout lacks %q:\n%s", w, r.stdout)
				}
			}
			for _, n := range append(tc.notOut, "sk-dotenv-secret", "sk-ant-dotenv-secret", "sk-env-secret") {
				if strings.Contains(r.stdout+r.stderr, n) {
					t.Errorf("output holds %q", n)
				}
			}
		})
	}
}
