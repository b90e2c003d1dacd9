// Package configs holds kagent's configuration: one struct, layered as
// defaults < YAML (an embedded strategy, ./configs/NAME.yaml or --config FILE)
// < KAGENT_* environment < command-line flags, and validated before use.
// The embedded strategy files live in strategies/.
package configs

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/search"
)

// Strategy names.
const (
	StrategyGreedy = search.Greedy
	StrategyBeam   = search.Beam
	StrategyElites = search.Elites
	StrategyTune   = search.Tune
	StrategyNoop   = search.Noop
)

// Profiling policies (profile_candidates).
const (
	ProfileImproving = "improving"
	ProfileFinal     = "final"
	ProfileAll       = "all"
	ProfileNone      = "none"
)

// What a hardware profile collects (profile_metrics).
const (
	ProfileMetricsFull     = "full"
	ProfileMetricsRoofline = "roofline"
)

// Config is everything a run can be told. YAML keys are KernelAgent's where it
// has one, so its configs load unchanged.
type Config struct {
	Strategy       string         `yaml:"strategy"`
	StrategyConfig StrategyConfig `yaml:"strategy_config"`
	MaxRounds      int            `yaml:"max_rounds"`
	// NumWorkers bounds how many candidates are evaluated at once (KernelAgent:
	// worker processes; here the LLM and evaluation concurrency).
	NumWorkers     int `yaml:"num_workers"`
	RefineAttempts int `yaml:"refine_attempts"`

	// Platform is the platform name ("" = auto-detect). KernelAgent's per-component
	// map is accepted when every component names the same platform.
	Platform       PlatformSetting   `yaml:"platform"`
	TargetPlatform string            `yaml:"target_platform"`
	PlatformKwargs map[string]string `yaml:"platform_kwargs"`
	GPUName        string            `yaml:"gpu_name"`
	SpecsFile      string            `yaml:"specs_file"`
	NCUBinPath     string            `yaml:"ncu_bin_path"`
	// ProfileCandidates says which timed candidates the platform's profiler
	// (ncu, rocprofv3) runs on: "improving" (the default: the input, and a
	// candidate when it becomes the best at the end of a round, or a beam
	// parent before its diagnosis), "final" (nothing when timed, the input
	// included: the best is profiled once, when the run ends, and a parent
	// before its diagnosis; the knob searches, which read no metrics while
	// they search), "all", or "none".
	// The others are placed on the synthetic roofline (measured time against
	// the problem's bytes).
	ProfileCandidates string `yaml:"profile_candidates"`
	// ProfileMetrics is what an Nsight Compute profile collects: "full" (the
	// default: KernelAgent's 29 metrics for the LLM's diagnosis, the
	// speed-of-light percentages and the roofline's counters; 17 replay
	// passes of the profiled call on an H100) or "roofline" (the time, the
	// DRAM bytes and the FLOP counters: what places the kernel on the
	// roofline, in 6 passes on an H100; the SOL percentages are then
	// computed from them against the GPU's peaks). rocprofv3 collects its
	// own set.
	ProfileMetrics string `yaml:"profile_metrics"`
	Python         string `yaml:"python"`
	// Size is the timed shape: a name of the kernel dir's sizes (kagent.yaml)
	// or key=value overrides of the problem's size constants; "" keeps the
	// problem's own (the cpu platform then uses the kernel dir's "cpu" size
	// when it has one).
	Size string `yaml:"size"`

	BenchmarkWarmup     float64 `yaml:"benchmark_warmup"` // milliseconds of warm-up
	BenchmarkRepeat     float64 `yaml:"benchmark_repeat"` // milliseconds of measurement
	DivergenceThreshold float64 `yaml:"divergence_threshold"`
	// MinImprovementPct and NoiseFactor decide promotion: a candidate replaces
	// the best only if faster by more than MinImprovementPct and NoiseFactor x CV.
	MinImprovementPct float64 `yaml:"min_improvement_pct"`
	NoiseFactor       float64 `yaml:"noise_factor"`

	Roofline RooflineConfig `yaml:"roofline"`
	LLM      LLMConfig      `yaml:"llm"`
	Budget   BudgetConfig   `yaml:"budget"`
	Timeouts TimeoutConfig  `yaml:"timeouts"`

	// Templates overrides prompt templates: name -> file, or "dir" -> a folder.
	Templates map[string]string `yaml:"templates"`

	// KernelAgent keys kagent accepts. OpenAIModel and HighReasoningEffort map
	// onto llm.model and llm.reasoning_effort.
	OpenAIModel             string         `yaml:"openai_model"`
	HighReasoningEffort     *bool          `yaml:"high_reasoning_effort"`
	SOLImprovementThreshold float64        `yaml:"sol_improvement_threshold"`
	BottleneckOverride      string         `yaml:"bottleneck_override"`
	UseRAG                  bool           `yaml:"use_rag"`
	RooflineConfigKA        map[string]any `yaml:"roofline_config"`
}

// StrategyConfig is KernelAgent's strategy_config block.
type StrategyConfig struct {
	NumTopKernels    int `yaml:"num_top_kernels"`
	NumBottlenecks   int `yaml:"num_bottlenecks"`
	MaxNoImprovement int `yaml:"max_no_improvement"`
	// NumInspirations is how many elites of other cells each elites slot
	// shows with its parent (default 2).
	NumInspirations int `yaml:"num_inspirations"`
	// MaxVariants bounds the knob variants the tune strategy (and the tune
	// polish) evaluates per round.
	MaxVariants int `yaml:"max_variants"`
	// PolishRounds adds up to this many tune rounds on the best kernel after
	// an LLM search (0 = none).
	PolishRounds int `yaml:"polish_rounds"`
	// Eta is the halving strategy's reduction factor: each rung keeps the
	// fastest 1/eta of what it timed (0 = 3).
	Eta int `yaml:"eta"`
	// Finalists is how many screened variants the autotune strategy
	// verifies and times in full after a walk (0 = 3).
	Finalists int `yaml:"finalists"`
	// HeldOutTop and HeldOutWithinPct pick the screened variants screened
	// again at the held-out shapes once the search has ended: the run's
	// HeldOutTop fastest (0 = 12) within HeldOutWithinPct of the fastest
	// (0 = 25).
	HeldOutTop       int     `yaml:"held_out_top"`
	HeldOutWithinPct float64 `yaml:"held_out_within_pct"`
	// CutSlowerPct, when positive, cuts knob variants that cannot beat the
	// best: each is timed briefly once loaded, and one slower than the
	// best's time plus this percentage is not verified or timed further
	// (failure "slower"). 0 (the default) verifies every variant in full.
	CutSlowerPct float64 `yaml:"cut_slower_pct"`
}

// SearchSettings are the strategy's settings (strategy_config and
// divergence_threshold) as package search reads them.
func (c Config) SearchSettings() search.Settings {
	sc := c.StrategyConfig
	return search.Settings{NumTopKernels: sc.NumTopKernels, NumBottlenecks: sc.NumBottlenecks,
		MaxVariants: sc.MaxVariants, NumInspirations: sc.NumInspirations, DivergencePct: c.DivergenceThreshold, Eta: sc.Eta,
		Finalists: sc.Finalists}
}

// RooflineConfig tunes the roofline analysis and the roofline stop rule.
type RooflineConfig struct {
	// ThresholdPct is the SOL at which a kernel counts as at the roofline
	// (0 = the profiler's default: 95 with ncu, 85 with rocprof counters).
	ThresholdPct float64 `yaml:"threshold_pct"`
	// UnderutilizedPct: below this on both axes a kernel is latency-bound.
	UnderutilizedPct float64 `yaml:"underutilized_pct"`
	EarlyStop        *bool   `yaml:"early_stop"`
}

// LLMConfig selects and tunes the language model.
type LLMConfig struct {
	// Provider is openai (any OpenAI-compatible server with base_url), vllm,
	// sglang, ollama, openrouter, anthropic, google (gemini) or bedrock.
	Provider        string        `yaml:"provider"`
	Model           string        `yaml:"model"`
	BaseURL         string        `yaml:"base_url"`
	APIKeyEnv       string        `yaml:"api_key_env"`
	ReasoningEffort string        `yaml:"reasoning_effort"` // "" or one of llm.ReasoningEfforts()
	Temperature     *float64      `yaml:"temperature"`
	MaxConcurrency  int           `yaml:"max_concurrency"`
	Timeout         time.Duration `yaml:"timeout"`
	MaxRetries      int           `yaml:"max_retries"`
	// Prices are USD per million tokens, for cost accounting.
	PriceInPerM  float64 `yaml:"price_in_per_m"`
	PriceOutPerM float64 `yaml:"price_out_per_m"`
	// MaxTokens bounds each reply (0 = the LLM layer's default).
	MaxTokens int `yaml:"max_tokens"`
	// Record saves every exchange in this folder (--llm-record); Replay serves
	// a recorded folder back instead of calling a provider (--llm-replay).
	Record string `yaml:"record"`
	Replay string `yaml:"replay"`
	// Steps gives purposes (diagnose, optimize, refine, reflect, generate) a
	// model of their own; see StepConfig. The others use the fields above.
	Steps map[string]StepConfig `yaml:"steps,omitempty"`
}

// Configured reports whether an LLM is set up: a model to call or a
// recorded transcript to replay. Without one, the tune strategy proposes.
func (l LLMConfig) Configured() bool { return l.Model != "" || l.Replay != "" }

// BudgetConfig caps a run's LLM spend. Zero means no cap.
type BudgetConfig struct {
	MaxCalls  int           `yaml:"max_calls"`
	MaxTokens int           `yaml:"max_tokens"`
	MaxUSD    float64       `yaml:"max_usd"`
	MaxWall   time.Duration `yaml:"max_wall"`
}

// TimeoutConfig bounds each evaluation step. Verify, Bench and Profile left
// 0 (the default) follow the problem: a few times what the first kernel's
// step (for Profile, its verification) took, plus the load time and a
// floor, capped at 5 minutes (worker.Engine.Limits and ProfileLimit), so a
// hung candidate costs seconds on a small problem, about a minute under the
// profiler.
type TimeoutConfig struct {
	Verify  time.Duration `yaml:"verify"`
	Bench   time.Duration `yaml:"bench"`
	Profile time.Duration `yaml:"profile"`
	Load    time.Duration `yaml:"load"`
}

// PlatformSetting is a platform name, written in YAML either as a string or as
// KernelAgent's per-component map ({verifier: nvidia, profiler: nvidia, ...}).
type PlatformSetting string

// UnmarshalYAML accepts a string or a map whose values all name one platform.
func (p *PlatformSetting) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		*p = PlatformSetting(strings.TrimSpace(n.Value))
		return nil
	case yaml.MappingNode:
		names := map[string]bool{}
		for i := 1; i < len(n.Content); i += 2 {
			names[canonicalPlatform(n.Content[i].Value)] = true
		}
		if len(names) != 1 {
			var list []string
			for k := range names {
				list = append(list, k)
			}
			sort.Strings(list)
			return fmt.Errorf("line %d: platform components name different platforms (%s); kagent runs one platform per run: give one name", n.Line, strings.Join(list, ", "))
		}
		for k := range names {
			*p = PlatformSetting(k)
		}
		return nil
	}
	return fmt.Errorf("line %d: platform must be a name (%s) or a map of components to one name", n.Line, strings.Join(PlatformNames, ", "))
}

// canonicalPlatform maps KernelAgent's platform names onto kagent's.
func canonicalPlatform(s string) string {
	switch s = strings.ToLower(strings.TrimSpace(s)); s {
	case "nvidia":
		return "cuda"
	case "amd":
		return "rocm"
	case "intel":
		return "xpu"
	}
	return s
}

// PlatformName is the platform to use ("" = auto-detect).
func (c *Config) PlatformName() string { return canonicalPlatform(string(c.Platform)) }

// Default returns the configuration every layer starts from.
func Default() Config {
	return Config{
		Strategy:            StrategyGreedy,
		StrategyConfig:      StrategyConfig{NumTopKernels: 2, NumBottlenecks: 2, MaxNoImprovement: 3, MaxVariants: 8, NumInspirations: 2},
		MaxRounds:           10,
		ProfileCandidates:   ProfileImproving,
		ProfileMetrics:      ProfileMetricsFull,
		NumWorkers:          1,
		RefineAttempts:      3,
		BenchmarkWarmup:     25,
		BenchmarkRepeat:     100,
		DivergenceThreshold: 50,
		MinImprovementPct:   2,
		NoiseFactor:         3,
		Roofline:            RooflineConfig{UnderutilizedPct: 60},
		LLM: LLMConfig{
			// Provider "": inferred from the model name (claude-* anthropic,
			// gemini-* google, else openai or any OpenAI-compatible server).
			MaxConcurrency: 4,
			Timeout:        10 * time.Minute,
			MaxRetries:     5,
		},
		Timeouts: TimeoutConfig{
			Profile: 5 * time.Minute,
			Load:    10 * time.Minute,
		},
	}
}
