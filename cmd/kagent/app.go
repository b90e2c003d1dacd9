package main

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/termtext"
	"github.com/kagent-kernels/kagent/prompts"
)

// Version is set at build time with -ldflags "-X main.Version=...".
var Version = "dev"

func newApp() *cli.App {
	app := &cli.App{
		Name:                 "kagent",
		Usage:                "make Triton GPU kernels faster: profile, diagnose, rewrite, verify, time",
		Version:              versionString(),
		EnableBashCompletion: true,
		// Worker errors, candidates' exception text, check reasons and LLM
		// replies reach the terminal through these: every control character
		// is shown escaped, none acts on the terminal.
		Writer:    termtext.NewWriter(os.Stdout),
		ErrWriter: termtext.NewWriter(os.Stderr),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "debug, info, warn or error", EnvVars: []string{"KAGENT_LOG_LEVEL"}},
		},
		Commands: []*cli.Command{
			optimizeCommand(),
			generateCommand(),
			sweepCommand(),
			runsCommand(),
			uiCommand(),
			evalCommand(),
			profileCommand(),
			exportCommand(),
			specsCommand(),
			configsCommand(),
			doctorCommand(),
			envCommand(),
			versionCommand(),
			completionCommand(),
			docsCommand(),
		},
		CommandNotFound: commandNotFound,
		ExitErrHandler:  func(*cli.Context, error) {}, // main reports errors
	}
	app.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		if msg, ok := unknownFlag(err, app.Flags, "kagent --help"); ok {
			return usageError("%s", msg)
		}
		return usageError("%v (see --help)", err)
	}
	usageErrors(app, app.Commands, "")
	for _, c := range app.Commands {
		if slices.Contains(dotEnvCommands, c.Name) {
			c.Before = readDotEnv
		}
	}
	return app
}

// versionInfo is what the binary knows of its own build; `version --json`
// prints it.
type versionInfo struct {
	// Version is the version set at build time, else the module's version
	// from the build info ("dev" when neither names one).
	Version string `json:"version"`
	// Revision, Time and Modified are the VCS commit the binary was built
	// from, its time, and whether the tree had changes ("" and false when
	// the build recorded none).
	Revision string `json:"revision"`
	Time     string `json:"time"`
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

func readVersion() versionInfo {
	vi := versionInfo{Version: Version, Go: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return vi
	}
	if vi.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		vi.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			vi.Revision = s.Value
		case "vcs.time":
			vi.Time = s.Value
		case "vcs.modified":
			vi.Modified = s.Value == "true"
		}
	}
	return vi
}

// versionString is the version with the VCS revision and time the binary
// was built from: "v1.2.0 (rev 1a2b3c4d5e6f, 2026-12-02T09:00:00Z, modified)".
func versionString() string {
	vi := readVersion()
	v, rev := vi.Version, vi.Revision
	if rev == "" {
		return v
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	var details []string
	if !strings.Contains(v, rev) { // a pseudo-version names the commit already
		details = append(details, "rev "+rev)
		if vi.Time != "" {
			details = append(details, vi.Time)
		}
	}
	if vi.Modified && !strings.Contains(v, "+dirty") {
		details = append(details, "modified")
	}
	if len(details) == 0 {
		return v
	}
	return v + " (" + strings.Join(details, ", ") + ")"
}

// logger builds the logger from --log-level.
func logger(c *cli.Context) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(c.App.ErrWriter, &slog.HandlerOptions{Level: level, ReplaceAttr: shortFloats}))
}

// platformLogger is the logger the platform's sessions get: their workers'
// and profilers' lines (a worker replaced, a retried load, a profiler's
// phases) at --log-level debug only, whatever their own level. A command's
// own lines and errors say what the user must know; these are diagnostics,
// and an error the user sees as one line is not preceded by its retries.
func platformLogger(c *cli.Context) *slog.Logger {
	return slog.New(debugOnly{logger(c).Handler()})
}

// debugOnly hands every record to h at debug level, naming the level it
// was logged at.
type debugOnly struct{ h slog.Handler }

func (d debugOnly) Enabled(ctx context.Context, _ slog.Level) bool {
	return d.h.Enabled(ctx, slog.LevelDebug)
}

func (d debugOnly) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
	if r.Level != slog.LevelDebug {
		out.AddAttrs(slog.String("logged_as", r.Level.String()))
	}
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	return d.h.Handle(ctx, out)
}

func (d debugOnly) WithAttrs(as []slog.Attr) slog.Handler { return debugOnly{d.h.WithAttrs(as)} }
func (d debugOnly) WithGroup(name string) slog.Handler    { return debugOnly{d.h.WithGroup(name)} }

// shortFloats writes a log line's floats with 4 significant digits
// (cv=0.3592, not cv=0.3591728124555714); the JSON artifacts keep them whole.
func shortFloats(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindFloat64 {
		return slog.String(a.Key, strconv.FormatFloat(a.Value.Float64(), 'g', 4, 64))
	}
	return a
}

// configFlags are the flags of every command that runs kernels. Each sets
// the config key of the same meaning and wins over YAML and environment.
func configFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "strategy", Aliases: []string{"s"}, Usage: "config `NAME`: embedded (see kagent configs list) or ./configs/NAME.yaml"},
		&cli.StringFlag{Name: "config", Aliases: []string{"c"}, Usage: "config `FILE` (YAML)"},
		&cli.StringFlag{Name: "platform", Usage: configs.Words(configs.PlatformNames, "or") + " (default: auto-detect)"},
		&cli.StringFlag{Name: "gpu-name", Usage: "GPU name for the specs lookup"},
		&cli.StringFlag{Name: "python", Usage: "Python interpreter with torch (and triton on GPUs)"},
		&cli.StringFlag{Name: "size", Usage: "timed shape: a NAME of kagent.yaml's sizes, or KEY=VALUE,... overrides of the problem's size constants"},
	}
}

// llmConfigFlags are the configuration flags of the commands that ask an
// LLM (optimize, generate, sweep).
func llmConfigFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "llm-model", Usage: "default LLM model (llm.model): serves every purpose that llm.steps gives no model of its own"},
		&cli.StringFlag{Name: "llm-provider", Usage: "provider of the default model (llm.provider; not of llm.steps): openai (any OpenAI-compatible server), anthropic, google or bedrock"},
		&cli.StringFlag{Name: "llm-base-url", Usage: "base URL of an OpenAI-compatible server"},
	}
}

// searchConfigFlags are the configuration flags of the commands that run an
// optimization (optimize, sweep).
func searchConfigFlags() []cli.Flag {
	return []cli.Flag{
		&cli.IntFlag{Name: "max-rounds", Usage: "maximum optimization rounds", DefaultText: "the config's"},
		&cli.IntFlag{Name: "num-workers", Usage: "candidates evaluated at once", DefaultText: "the config's"},
	}
}

// loadConfig builds the configuration: defaults < YAML < KAGENT_* < flags.
func loadConfig(c *cli.Context) (configs.Config, configs.Source, error) {
	wd, err := os.Getwd()
	if err != nil {
		return configs.Config{}, configs.Source{}, err
	}
	cfg, src, err := configs.Load(configs.LoadOptions{
		WorkDir:    wd,
		Strategy:   c.String("strategy"),
		ConfigFile: c.String("config"),
	})
	if err != nil {
		return cfg, src, err
	}
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return cfg, src, fmt.Errorf("%s: %w", src.Path, err)
	}
	// A mistake the flags make is the flags', not the config file's.
	set := applyConfigFlags(c, &cfg)
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		return cfg, src, fmt.Errorf("%s: %w", strings.Join(set, " "), err)
	}
	cfg.Templates = templatePaths(cfg.Templates, src.Path, wd)
	for _, w := range cfg.Ignored() {
		fmt.Fprintf(c.App.ErrWriter, "kagent: %s: %s\n", src.Path, w)
	}
	return cfg, src, nil
}

// templatePaths makes the files of the templates: map absolute: relative to
// the config file's folder, or to the working folder for an embedded config.
func templatePaths(m map[string]string, configPath, wd string) map[string]string {
	if len(m) == 0 {
		return m
	}
	base := wd
	if configPath != "" && !strings.HasPrefix(configPath, "embedded:") {
		base = filepath.Dir(absPath(configPath))
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if v != "" && !filepath.IsAbs(v) {
			v = filepath.Join(base, v)
		}
		out[k] = v
	}
	return out
}

// promptSet compiles the prompt templates with the config's templates:
// overrides (nil without any: the embedded templates).
func promptSet(cfg configs.Config) (*prompts.Set, error) {
	if len(cfg.Templates) == 0 {
		return nil, nil
	}
	set, err := prompts.New(prompts.OptionsFromMap(cfg.Templates))
	if err != nil {
		return nil, usageError("templates: %v", err)
	}
	return set, nil
}

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:  "version",
		Usage: "print kagent's version",
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			if c.Bool("json") {
				return writeJSON(c.App.Writer, readVersion())
			}
			fmt.Fprintf(c.App.Writer, "kagent %s %s\n", versionString(), runtime.Version())
			return nil
		},
	}
}

// envVar is one row of `kagent env --json`.
type envVar struct {
	Name        string `json:"name"`
	Value       string `json:"value"` // "" when unset
	Description string `json:"description"`
}

func envCommand() *cli.Command {
	return &cli.Command{
		Name:  "env",
		Usage: "list the KAGENT_* environment variables and their current values",
		Flags: []cli.Flag{jsonFlag()},
		Action: func(c *cli.Context) error {
			vars := make([]envVar, len(configs.Env))
			for i, e := range configs.Env {
				vars[i] = envVar{Name: e.Name, Value: os.Getenv(e.Name), Description: e.Description}
			}
			if c.Bool("json") {
				return writeJSON(c.App.Writer, vars)
			}
			w := newTable(c.App.Writer)
			w.row("VARIABLE", "VALUE", "MEANING")
			for _, v := range vars {
				w.row(v.Name, cmp.Or(v.Value, "-"), v.Description)
			}
			return w.flush()
		},
	}
}

// jsonFlag is --json of the commands that print a table or text: it prints
// the same facts as JSON with snake_case field names, one object, or an
// array of one object per row for a list.
func jsonFlag() cli.Flag {
	return &cli.BoolFlag{Name: "json", Usage: "print JSON"}
}
