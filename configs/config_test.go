package configs

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/search"
)

// TestEmbeddedConfigsLoadAndValidate: the embedded presets are one per
// registered strategy (so that --strategy finds each) and one per GPU
// vendor, and every one loads and validates.
func TestEmbeddedConfigsLoadAndValidate(t *testing.T) {
	want := append([]string{"amd", "intel", "nvidia"}, search.Names()...)
	slices.Sort(want)
	got := Embedded()
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Embedded() = %v, want %v (a preset strategies/<name>.yaml for every strategy of search.Names() and the vendor presets)", got, want)
	}
	for _, name := range got {
		t.Run(name, func(t *testing.T) {
			cfg, src, err := Load(LoadOptions{WorkDir: t.TempDir(), Strategy: name, Getenv: noEnv})
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !strings.HasPrefix(src.Path, "embedded:") {
				t.Errorf("source = %q, want embedded", src.Path)
			}
			cfg.Normalize()
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			// Only the tune preset cuts slower variants after a quick timing.
			if want := map[string]float64{StrategyTune: 0.5}[name]; cfg.StrategyConfig.CutSlowerPct != want {
				t.Errorf("cut_slower_pct %g, want %g", cfg.StrategyConfig.CutSlowerPct, want)
			}
		})
	}
}

func TestEmbeddedPlatforms(t *testing.T) {
	for name, want := range map[string]string{"amd": "rocm", "nvidia": "cuda", "intel": "xpu", "noop": "noop", "greedy": ""} {
		cfg, _, err := Load(LoadOptions{WorkDir: t.TempDir(), Strategy: name, Getenv: noEnv})
		if err != nil {
			t.Fatal(err)
		}
		if got := cfg.PlatformName(); got != want {
			t.Errorf("%s: platform = %q, want %q", name, got, want)
		}
	}
}

func noEnv(string) string { return "" }

func TestLocalConfigWinsOverEmbedded(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "configs", "greedy.yaml"), "strategy: greedy\nmax_rounds: 2\n")
	cfg, src, err := Load(LoadOptions{WorkDir: dir, Strategy: "greedy", Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxRounds != 2 || !strings.HasSuffix(src.Path, filepath.Join("configs", "greedy.yaml")) {
		t.Fatalf("got max_rounds %d from %s, want 2 from ./configs/greedy.yaml", cfg.MaxRounds, src.Path)
	}
	list, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		if s.Name == "greedy" && strings.HasPrefix(s.Path, "embedded:") {
			t.Errorf("List still shows the embedded greedy")
		}
	}
}

func TestLayering(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	writeFile(t, file, "strategy: greedy\nmax_rounds: 7\nnum_workers: 2\nllm:\n  model: from-yaml\n")
	env := map[string]string{"KAGENT_MAX_ROUNDS": "9", "KAGENT_LLM_MODEL": "from-env"}
	cfg, _, err := Load(LoadOptions{WorkDir: dir, ConfigFile: file, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxRounds != 9 {
		t.Errorf("max_rounds = %d, want 9 (env over yaml)", cfg.MaxRounds)
	}
	if cfg.NumWorkers != 2 {
		t.Errorf("num_workers = %d, want 2 (yaml over default)", cfg.NumWorkers)
	}
	if cfg.LLM.Model != "from-env" {
		t.Errorf("llm.model = %q, want from-env", cfg.LLM.Model)
	}
	if cfg.BenchmarkRepeat != 100 {
		t.Errorf("benchmark_repeat = %g, want the default 100", cfg.BenchmarkRepeat)
	}
}

func TestBadInputErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		want       []string
	}{
		{"malformed", "strategy: greedy\nmax_rounds: [1,\n", []string{"c.yaml:", "ErrInvalid"}},
		{"unknown top-level key", "strategy: greedy\nmax_round: 3\n", []string{"c.yaml:2:", `unknown key "max_round"; did you mean "max_rounds"?`}},
		{"unknown nested key", "llm:\n  model: x\n  modle: y\n", []string{"c.yaml:3:", `unknown key "modle" in llm; did you mean "model"?`}},
		{"unknown key, nothing close", "speed: max\n", []string{"c.yaml:1:", `unknown key "speed" (known: `, "max_rounds"}},
		{"wrong type", "max_rounds: many\n", []string{"c.yaml:1:"}},
		{"mixed platform map", "platform:\n  verifier: nvidia\n  profiler: noop\n", []string{"c.yaml:", "different platforms"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.yaml")
			writeFile(t, file, tc.yaml)
			_, _, err := Load(LoadOptions{ConfigFile: file, Getenv: noEnv})
			if err == nil {
				t.Fatal("Load succeeded, want an error")
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v is not ErrInvalid", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			for _, w := range tc.want {
				if w == "ErrInvalid" {
					continue
				}
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestMissingAndUnknownNames(t *testing.T) {
	if _, _, err := Load(LoadOptions{WorkDir: t.TempDir(), Strategy: "nope", Getenv: noEnv}); !errors.Is(err, ErrUnknownConfig) || !strings.Contains(err.Error(), "greedy") {
		t.Errorf("unknown strategy: %v", err)
	}
	if _, _, err := Load(LoadOptions{WorkDir: t.TempDir(), Strategy: "gredy", Getenv: noEnv}); !errors.Is(err, ErrUnknownConfig) || !strings.Contains(err.Error(), `"gredy"; did you mean "greedy"?`) {
		t.Errorf("mistyped strategy: %v", err)
	}
	if _, _, err := Load(LoadOptions{ConfigFile: "/no/such/file.yaml", Getenv: noEnv}); err == nil || !strings.Contains(err.Error(), "/no/such/file.yaml: file not found") {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := Load(LoadOptions{ConfigFile: "x.yaml", Strategy: "greedy", Getenv: noEnv}); !errors.Is(err, ErrInvalid) {
		t.Errorf("both --config and --strategy: %v", err)
	}
}

func TestKernelAgentConfigLoads(t *testing.T) {
	cfg, _, err := Load(LoadOptions{ConfigFile: "testdata/kernelagent_nvidia.yaml", Getenv: noEnv})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Normalize()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if cfg.PlatformName() != "cuda" || cfg.LLM.Model != "gpt-5" || cfg.LLM.ReasoningEffort != "high" ||
		cfg.StrategyConfig.NumBottlenecks != 2 || cfg.GPUName != "NVIDIA H100 NVL 94GB" || cfg.Templates["kernel_optimization"] == "" {
		t.Errorf("KernelAgent keys not mapped: %+v", cfg)
	}
}

func TestValidateMessages(t *testing.T) {
	cases := []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"strategy", func(c *Config) { c.Strategy = "random" }, `strategy "random" is not one of`},
		{"rounds", func(c *Config) { c.MaxRounds = 0 }, "max_rounds is 0: set it to 1 or more"},
		{"platform", func(c *Config) { c.Platform = "tpu" }, `platform "tpu" is not one of`},
		{"beam", func(c *Config) { c.Strategy = StrategyBeam; c.StrategyConfig.NumBottlenecks = 0 }, "num_bottlenecks is 0"},
		{"provider", func(c *Config) { c.LLM.Provider = "cohere" }, `llm.provider "cohere"`},
		{"rag", func(c *Config) { c.UseRAG = true }, "use_rag"},
		{"threshold", func(c *Config) { c.Roofline.ThresholdPct = 120 }, "threshold_pct is 120"},
		{"record and replay", func(c *Config) { c.LLM.Record, c.LLM.Replay = "a", "b" }, "llm.record and llm.replay are exclusive"},
		{"dollars without prices", func(c *Config) { c.Budget.MaxUSD = 5 }, "budget.max_usd is set but llm.price_in_per_m"},
		{"negative variants", func(c *Config) { c.StrategyConfig.MaxVariants = -1 }, "max_variants"},
		{"negative cut", func(c *Config) { c.StrategyConfig.CutSlowerPct = -3 }, "cut_slower_pct is -3"},
		{"no number cut", func(c *Config) { c.StrategyConfig.CutSlowerPct = math.NaN() }, "cut_slower_pct is NaN"},
		{"metric set", func(c *Config) { c.ProfileMetrics = "sol" }, `profile_metrics "sol" is not one of full, roofline`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			tc.mod(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	cfg := Default()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	for _, p := range []string{"vllm", "sglang", "ollama", "openrouter", "gemini", "Anthropic"} {
		cfg := Default()
		cfg.LLM.Provider = p
		if err := cfg.Validate(); err != nil {
			t.Errorf("provider %s: %v", p, err)
		}
	}
}

// TestCutFromTheEnvironment: KAGENT_CUT_SLOWER_PCT overrides the tune
// preset's cut (an A/B of whole sweeps switches it so).
func TestCutFromTheEnvironment(t *testing.T) {
	env := map[string]string{"KAGENT_CUT_SLOWER_PCT": "0"}
	cfg, _, err := Load(LoadOptions{WorkDir: t.TempDir(), Strategy: StrategyTune, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StrategyConfig.CutSlowerPct != 0 {
		t.Errorf("cut_slower_pct %g, want 0 from the environment over the preset's 0.5", cfg.StrategyConfig.CutSlowerPct)
	}
}

// TestProfileMetrics: the knob searches' presets profile the roofline's metrics only,
// the others the full set, and KAGENT_PROFILE_METRICS overrides either.
func TestProfileMetrics(t *testing.T) {
	for _, tc := range []struct{ strategy, env, want string }{
		{StrategyTune, "", ProfileMetricsRoofline},
		{"autotune", "", ProfileMetricsRoofline},
		{"halving", "", ProfileMetricsRoofline},
		{StrategyGreedy, "", ProfileMetricsFull},
		{StrategyTune, "full", ProfileMetricsFull},
		{StrategyGreedy, "roofline", ProfileMetricsRoofline},
	} {
		env := map[string]string{"KAGENT_PROFILE_METRICS": tc.env}
		cfg, _, err := Load(LoadOptions{WorkDir: t.TempDir(), Strategy: tc.strategy, Getenv: func(k string) string { return env[k] }})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.ProfileMetrics != tc.want {
			t.Errorf("%s with %q in the environment: profile_metrics %q, want %q", tc.strategy, tc.env, cfg.ProfileMetrics, tc.want)
		}
	}
}

func TestEnvErrors(t *testing.T) {
	cfg := Default()
	err := ApplyEnv(&cfg, func(k string) string {
		if k == "KAGENT_MAX_ROUNDS" {
			return "ten"
		}
		return ""
	})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "KAGENT_MAX_ROUNDS") {
		t.Fatalf("ApplyEnv = %v", err)
	}
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestEnvPlatformKwargs(t *testing.T) {
	cfg := Default()
	cfg.PlatformKwargs = map[string]string{"ncu_ahead": "false", "triton": "auto"}
	env := map[string]string{"KAGENT_PLATFORM_KWARGS": " triton=off , rocprof_bin_path=/opt/r=1"}
	if err := ApplyEnv(&cfg, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ncu_ahead": "false", "triton": "off", "rocprof_bin_path": "/opt/r=1"}
	if len(cfg.PlatformKwargs) != len(want) {
		t.Fatalf("kwargs %v, want %v", cfg.PlatformKwargs, want)
	}
	for k, v := range want {
		if cfg.PlatformKwargs[k] != v {
			t.Errorf("kwargs[%s] = %q, want %q", k, cfg.PlatformKwargs[k], v)
		}
	}
	env["KAGENT_PLATFORM_KWARGS"] = "triton"
	if err := ApplyEnv(&cfg, func(k string) string { return env[k] }); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "key=value") {
		t.Errorf("a pair without '=': %v", err)
	}
}

// TestIgnoredKernelAgentKeys: each KernelAgent key kagent reads but does not
// act on is named, with what to use instead; a config without them is quiet.
func TestIgnoredKernelAgentKeys(t *testing.T) {
	if got := Default().Ignored(); len(got) != 0 {
		t.Errorf("default config: %q", got)
	}
	c := Default()
	c.SOLImprovementThreshold, c.BottleneckOverride, c.RooflineConfigKA = 0.1, "memory", map[string]any{"x": 1}
	got := strings.Join(c.Ignored(), "\n")
	for _, want := range []string{"sol_improvement_threshold", "bottleneck_override", "roofline_config", "roofline.threshold_pct"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
}
