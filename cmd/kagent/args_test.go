package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func TestInterleaved(t *testing.T) {
	app := &cli.App{
		Flags: []cli.Flag{&cli.StringFlag{Name: "log-level"}},
		Commands: []*cli.Command{
			{Name: "runs", Subcommands: []*cli.Command{{Name: "show", Aliases: []string{"s"},
				Flags: []cli.Flag{&cli.StringFlag{Name: "kernel-dir", Aliases: []string{"k"}}, &cli.BoolFlag{Name: "json"}}}}},
		},
	}
	for _, tc := range []struct{ in, want string }{
		{"kagent runs show R --kernel-dir D", "kagent runs show --kernel-dir D R"},
		{"kagent runs show R --json -k D", "kagent runs show --json -k D R"},
		{"kagent runs s R --kernel-dir=D", "kagent runs s --kernel-dir=D R"},
		{"kagent runs show R --log-level debug", "kagent --log-level debug runs show R"},
		{"kagent --log-level debug runs show R", "kagent --log-level debug runs show R"},
		{"kagent runs show R --bogus x", "kagent runs show --bogus R x"},
		{"kagent runs show --json -- --not-a-flag R", "kagent runs show --json -- --not-a-flag R"},
		{"kagent runs show - --json", "kagent runs show --json -"},
		{"kagent unknown R --json", "kagent unknown R --json"},
		{"kagent runs show R --js --generate-bash-completion", "kagent runs show --js R --generate-bash-completion"},
		{"kagent", "kagent"},
	} {
		if got := strings.Join(interleaved(app, strings.Fields(tc.in)), " "); got != tc.want {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFlagsAnywhereAndUsageErrors: flags after a command's arguments are
// read; a flag mistake is one line with exit code 2 and no help on stdout.
func TestFlagsAnywhereAndUsageErrors(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	// --kernel-dir after the RUN argument reaches runs show: it looks in other.
	oneLineError(t, run(t, dir, "runs", "show", "r1", "--kernel-dir", other), ExitUsage, "no run history at "+other)
	if r := run(t, dir, "env", "--log-level", "debug"); r.code != 0 || !strings.Contains(r.stdout, "KAGENT_STRATEGY") {
		t.Errorf("a global flag after the command: exit %d\n%s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"optimize", "--bogus"}, {"runs", "list", "--nope"}, {"--nope"}} {
		r := run(t, dir, args...)
		oneLineError(t, r, ExitUsage, "unknown flag --", "--help")
		if r.stdout != "" {
			t.Errorf("%v: help on stdout:\n%s", args, r.stdout)
		}
	}
	if r := run(t, dir, "version"); r.code != 0 || !strings.HasPrefix(r.stdout, "kagent ") || !strings.Contains(r.stdout, " go1.") {
		t.Errorf("version: exit %d %q", r.code, r.stdout)
	}
}

// TestTypoSuggestions: a mistyped command, flag, config key or config name
// is one line with exit code 2 that names the closest valid one, or where
// to look when nothing is close.
func TestTypoSuggestions(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "typo.yaml")
	if err := os.WriteFile(cfg, []byte("strategy: noop\nmax_round: 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"command", []string{"optimze"}, `unknown command "optimze"; did you mean "optimize"?`},
		{"subcommand", []string{"configs", "lst"}, `unknown command "configs lst"; did you mean "configs list"?`},
		{"help of a command", []string{"help", "optimze"}, `did you mean "optimize"?`},
		{"sweep subcommand", []string{"sweep", "stats"}, `unexpected argument "stats"; did you mean "sweep status"?`},
		{"command, nothing close", []string{"deploy"}, `unknown command "deploy" (see kagent --help)`},
		{"subcommand, nothing close", []string{"runs", "deploy"}, `unknown command "runs deploy" (see kagent runs --help)`},
		{"flag", []string{"optimize", "--max-round", "3"}, "optimize: unknown flag --max-round; did you mean --max-rounds?"},
		{"flag=value after an argument", []string{"runs", "show", "r1", "--kernel_dir=x"}, "runs show: unknown flag --kernel_dir; did you mean --kernel-dir?"},
		{"global flag", []string{"--log-leve", "debug", "env"}, "unknown flag --log-leve; did you mean --log-level?"},
		{"global flag after the command", []string{"env", "--log-leve", "debug"}, "env: unknown flag --log-leve; did you mean --log-level?"},
		{"flag, nothing close", []string{"optimize", "--bogus"}, "optimize: unknown flag --bogus (see kagent optimize --help)"},
		{"whole number", []string{"optimize", "--max-rounds", "abc"}, `optimize: --max-rounds: "abc" is not a whole number (see kagent optimize --help)`},
		{"duration", []string{"sweep", "--poll=5"}, `sweep: --poll: "5" is not a duration such as 90s, 5m or 1h30m`},
		{"boolean", []string{"optimize", "--no-progress=maybe"}, `optimize: --no-progress: "maybe" is not true or false`},
		{"config key", []string{"optimize", "--kernel-dir", ".", "--config", cfg}, `typo.yaml:2: unknown key "max_round"; did you mean "max_rounds"?`},
		{"config name", []string{"optimize", "--kernel-dir", ".", "--strategy", "gredy"}, `unknown config: "gredy"; did you mean "greedy"?`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, dir, tc.args...)
			oneLineError(t, r, ExitUsage, tc.want)
			if r.stdout != "" {
				t.Errorf("output on stdout:\n%s", r.stdout)
			}
			if strings.Contains(tc.name, "nothing close") && strings.Contains(r.stderr, "did you mean") {
				t.Errorf("a suggestion where nothing is close: %q", r.stderr)
			}
		})
	}
}

func TestShortFloatsInLogs(t *testing.T) {
	var b strings.Builder
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: shortFloats}))
	log.Info("baseline timed again", "cv", 0.3591728124555714, "median_ms", 0.19564650000002126, "n", 7)
	if got := b.String(); !strings.Contains(got, "cv=0.3592 median_ms=0.1956 n=7") {
		t.Errorf("log line %q", got)
	}
}

// TestPlatformLinesAtDebugOnly: the sessions' own lines (a retried load, a
// worker replaced) reach the log at --log-level debug, naming the level
// they were logged at, and not at the default level.
func TestPlatformLinesAtDebugOnly(t *testing.T) {
	for _, tc := range []struct {
		level slog.Level
		want  string
	}{
		{slog.LevelInfo, ""},
		{slog.LevelDebug, `level=DEBUG msg="worker replaced" logged_as=WARN slot=0`},
	} {
		var b strings.Builder
		log := slog.New(debugOnly{slog.NewTextHandler(&b, &slog.HandlerOptions{Level: tc.level})})
		log.Warn("worker replaced", "slot", 0)
		if got := b.String(); (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("at %v: logged %q, want %q", tc.level, got, tc.want)
		}
	}
}

// TestEvalOfAFailedKernelTimesNothing: a kernel that fails verification is
// not timed, and neither are the baselines.
func TestEvalOfAFailedKernelTimesNothing(t *testing.T) {
	dir := cpuKernelDir(t)
	if err := os.WriteFile(filepath.Join(dir, "input.py"), []byte("def kernel_function(x):\n    return x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, "eval", "--kernel-dir", ".", "--platform", "cpu")
	if r.code != ExitError || !strings.Contains(r.stdout, "not timed (the kernel failed verification") ||
		strings.Contains(r.stdout, "eager") {
		t.Errorf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	j := run(t, dir, "eval", "--kernel-dir", ".", "--platform", "cpu", "--json")
	if strings.Contains(j.stdout, `"target": "eager"`) {
		t.Errorf("--json holds a baseline timing:\n%s", j.stdout)
	}
}
