package configs

import (
	"fmt"
	"strings"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/search"
)

// PlatformNames are the platforms kagent has, as users name them (the
// platform registry holds the implementations; platform/all's test keeps
// the two equal). GPUPlatforms are those whose kernels run on a GPU: the
// targets prompts are written for.
var (
	PlatformNames = []string{"cuda", "rocm", "xpu", PlatformCPU, PlatformNoop}
	GPUPlatforms  = []string{"cuda", "rocm", "xpu"}
)

// PlatformNoop is the platform that executes nothing (dry runs);
// PlatformCPU runs candidates on CPU torch (timings not representative).
const (
	PlatformNoop = "noop"
	PlatformCPU  = "cpu"
)

// The cpu platform's Triton policy: the platform_kwargs key and its values
// (kept equal to the cpu package's by platform/all's test).
const (
	CPUKwargTriton   = "triton"
	CPUTritonAuto    = "auto"    // required exactly when triton is importable
	CPUTritonRequire = "require" // always required
	CPUTritonOff     = "off"     // plain torch candidates
)

// ExecutingPlatforms are the platforms that run kernels.
func ExecutingPlatforms() []string {
	var out []string
	for _, n := range PlatformNames {
		if n != PlatformNoop {
			out = append(out, n)
		}
	}
	return out
}

// Words lists names for a message: "a, b or c".
func Words(names []string, last string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " " + last + " " + names[len(names)-1]
}

var (
	profilePolicies   = []string{ProfileImproving, ProfileFinal, ProfileAll, ProfileNone}
	profileMetricSets = []string{ProfileMetricsFull, ProfileMetricsRoofline}
)

// Validate checks the whole configuration and reports every problem found,
// each saying what to change.
func (c *Config) Validate() error {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	for _, p := range search.Check(c.Strategy, c.SearchSettings()) {
		add("%s", p)
	}
	if p := c.PlatformName(); p != "" && !contains(PlatformNames, p) {
		add("platform %q is not one of %s (or leave it empty to auto-detect)", p, strings.Join(PlatformNames, ", "))
	}
	if t := c.TargetPlatform; t != "" && !contains(GPUPlatforms, t) {
		add("target_platform %q is not one of %s", t, strings.Join(GPUPlatforms, ", "))
	}
	if !contains(profilePolicies, c.ProfileCandidates) {
		add("profile_candidates %q is not one of %s", c.ProfileCandidates, strings.Join(profilePolicies, ", "))
	}
	if !contains(profileMetricSets, c.ProfileMetrics) {
		add("profile_metrics %q is not one of %s", c.ProfileMetrics, strings.Join(profileMetricSets, ", "))
	}
	if c.MaxRounds < 1 {
		add("max_rounds is %d: set it to 1 or more", c.MaxRounds)
	}
	if c.NumWorkers < 1 {
		add("num_workers is %d: set it to 1 or more", c.NumWorkers)
	}
	if c.RefineAttempts < 0 {
		add("refine_attempts is %d: set it to 0 or more", c.RefineAttempts)
	}
	if c.StrategyConfig.MaxNoImprovement < 1 {
		add("strategy_config.max_no_improvement is %d: set it to 1 or more", c.StrategyConfig.MaxNoImprovement)
	}
	if c.BenchmarkWarmup <= 0 || c.BenchmarkRepeat <= 0 {
		add("benchmark_warmup and benchmark_repeat are time budgets in milliseconds: both must be above 0")
	}
	if c.DivergenceThreshold <= 0 {
		add("divergence_threshold is %g: give a percentage above 0 (KernelAgent's default is 50)", c.DivergenceThreshold)
	}
	if c.MinImprovementPct < 0 || c.NoiseFactor < 0 {
		add("min_improvement_pct and noise_factor must not be negative")
	}
	if t := c.Roofline.ThresholdPct; t < 0 || t > 100 {
		add("roofline.threshold_pct is %g: give a percentage between 0 and 100", t)
	}
	if p := strings.ToLower(strings.TrimSpace(c.LLM.Provider)); p != "" && !contains(llm.ProviderNames(), p) {
		add("llm.provider %q is not one of %s (any OpenAI-compatible server is openai with llm.base_url)", c.LLM.Provider, strings.Join(llm.ProviderNames(), ", "))
	}
	if e := c.LLM.ReasoningEffort; e != "" && !contains(llm.ReasoningEfforts(), e) {
		add("llm.reasoning_effort %q is not one of %s", e, strings.Join(llm.ReasoningEfforts(), ", "))
	}
	for _, e := range c.LLM.validateSteps() {
		add("%s", e)
	}
	if c.LLM.Record != "" && c.LLM.Replay != "" {
		add("llm.record and llm.replay are exclusive: record a transcript or replay one")
	}
	if c.LLM.MaxRetries < 0 || c.LLM.MaxTokens < 0 || c.LLM.PriceInPerM < 0 || c.LLM.PriceOutPerM < 0 {
		add("llm.max_retries, llm.max_tokens and the llm prices must not be negative")
	}
	if c.Budget.MaxUSD > 0 && c.LLM.PriceInPerM == 0 && c.LLM.PriceOutPerM == 0 && c.LLM.Replay == "" {
		add("budget.max_usd is set but llm.price_in_per_m and llm.price_out_per_m are not: kagent cannot count dollars without prices")
	}
	if c.StrategyConfig.MaxVariants < 0 || c.StrategyConfig.PolishRounds < 0 {
		add("strategy_config.max_variants and strategy_config.polish_rounds must not be negative")
	}
	if c.StrategyConfig.HeldOutTop < 0 || c.StrategyConfig.HeldOutWithinPct < 0 {
		add("strategy_config.held_out_top and strategy_config.held_out_within_pct must not be negative (0 for the defaults, 12 and 25)")
	}
	if p := c.StrategyConfig.CutSlowerPct; !(p >= 0 && p <= 1000) {
		add("strategy_config.cut_slower_pct is %g: give a percentage of 0 (off) or more, at most 1000", p)
	}
	if c.LLM.MaxConcurrency < 1 {
		add("llm.max_concurrency is %d: set it to 1 or more", c.LLM.MaxConcurrency)
	}
	if c.Budget.MaxCalls < 0 || c.Budget.MaxTokens < 0 || c.Budget.MaxUSD < 0 || c.Budget.MaxWall < 0 {
		add("budget caps must not be negative (0 means no cap)")
	}
	if c.UseRAG {
		add("use_rag: kagent has no retrieval database; remove the key or set it to false")
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(errs, "; "))
	}
	return nil
}

// Normalize folds KernelAgent's aliases into kagent's own keys. Call it after
// every layer is applied and before Validate.
func (c *Config) Normalize() {
	if c.LLM.Model == "" && c.OpenAIModel != "" {
		c.LLM.Model = c.OpenAIModel
	}
	if c.LLM.ReasoningEffort == "" && c.HighReasoningEffort != nil && *c.HighReasoningEffort {
		c.LLM.ReasoningEffort = "high"
	}
	c.Platform = PlatformSetting(c.PlatformName())
	if c.TargetPlatform == "" {
		if p := c.PlatformName(); contains(GPUPlatforms, p) {
			c.TargetPlatform = p
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Ignored lists, one line each, the KernelAgent keys this configuration sets
// that kagent reads but does not act on, and what stands in for each.
func (c Config) Ignored() []string {
	var out []string
	if c.SOLImprovementThreshold != 0 {
		out = append(out, "sol_improvement_threshold is ignored: promotion follows min_improvement_pct and noise_factor, the roofline stop rule roofline.threshold_pct")
	}
	if c.BottleneckOverride != "" {
		out = append(out, "bottleneck_override is ignored: the diagnosis comes from the profile; a diagnose template (templates:) can steer it")
	}
	if len(c.RooflineConfigKA) > 0 {
		out = append(out, "roofline_config is ignored: set roofline.threshold_pct, roofline.underutilized_pct and roofline.early_stop instead")
	}
	return out
}
