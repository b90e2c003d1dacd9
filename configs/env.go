package configs

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/search"
)

// EnvVar is one KAGENT_* environment variable.
type EnvVar struct {
	Name        string
	Description string
	// apply sets the value on a config; nil for variables read elsewhere.
	apply func(c *Config, v string) error
}

// Env lists every KAGENT_* variable, in the order `kagent env` prints them.
var Env = []EnvVar{
	{"KAGENT_STRATEGY", "search strategy (" + strings.Join(search.Names(), ", ") + ")", func(c *Config, v string) error { c.Strategy = v; return nil }},
	{"KAGENT_PLATFORM", "platform (" + strings.Join(PlatformNames, ", ") + "); empty = auto-detect", func(c *Config, v string) error { c.Platform = PlatformSetting(v); return nil }},
	{"KAGENT_GPU_NAME", "GPU name for the specs lookup, overriding the detected one", func(c *Config, v string) error { c.GPUName = v; return nil }},
	{"KAGENT_SPECS_FILE", "YAML file of extra or overriding GPU specs", func(c *Config, v string) error { c.SpecsFile = v; return nil }},
	{"KAGENT_MAX_ROUNDS", "maximum optimization rounds", intSetter(func(c *Config) *int { return &c.MaxRounds })},
	{"KAGENT_NUM_WORKERS", "candidates evaluated at once", intSetter(func(c *Config) *int { return &c.NumWorkers })},
	{"KAGENT_PROFILE_CANDIDATES", "candidates the profiler runs on: improving (default), final, all, none", func(c *Config, v string) error { c.ProfileCandidates = v; return nil }},
	{"KAGENT_PROFILE_METRICS", "what an ncu profile collects: full (default), roofline", func(c *Config, v string) error { c.ProfileMetrics = v; return nil }},
	{"KAGENT_PYTHON", "Python interpreter that runs the harness (needs torch; triton on GPUs)", func(c *Config, v string) error { c.Python = v; return nil }},
	{"KAGENT_PLATFORM_KWARGS", "platform_kwargs entries as key=value pairs, comma-separated (e.g. triton=off); they override the YAML's", kwargsSetter},
	{"KAGENT_SIZE", "timed shape: a name of the kernel dir's sizes, or key=value overrides of the problem's size constants", func(c *Config, v string) error { c.Size = v; return nil }},
	{"KAGENT_NCU_BIN", "Nsight Compute binary (ncu_bin_path)", func(c *Config, v string) error { c.NCUBinPath = v; return nil }},
	{"KAGENT_LLM_PROVIDER", "provider of the default LLM model (not of llm.steps): openai (any OpenAI-compatible server), anthropic, google, bedrock", func(c *Config, v string) error { c.LLM.Provider = v; return nil }},
	{"KAGENT_LLM_MODEL", "default LLM model (llm.model; llm.steps entries keep their own)", func(c *Config, v string) error { c.LLM.Model = v; return nil }},
	{"KAGENT_LLM_BASE_URL", "base URL of an OpenAI-compatible server (vLLM, SGLang, Ollama /v1, OpenRouter, a relay)", func(c *Config, v string) error { c.LLM.BaseURL = v; return nil }},
	{"KAGENT_LLM_API_KEY_ENV", "name of the variable holding the LLM key (the key itself is never read from config)", func(c *Config, v string) error { c.LLM.APIKeyEnv = v; return nil }},
	{"KAGENT_LLM_TIMEOUT", "per-call LLM timeout (Go duration, e.g. 10m)", durationSetter(func(c *Config) *time.Duration { return &c.LLM.Timeout })},
	{"KAGENT_CUT_SLOWER_PCT", "strategy_config.cut_slower_pct: knob variants a quick timing finds slower than the best by more than this percentage are not verified further (0: every variant in full; the tune preset: 0.5)", floatSetter(func(c *Config) *float64 { return &c.StrategyConfig.CutSlowerPct })},
	{"KAGENT_BUDGET_USD", "stop the run when LLM spend reaches this many dollars", floatSetter(func(c *Config) *float64 { return &c.Budget.MaxUSD })},
	{"KAGENT_CACHE_DIR", "cache for the installed harness and Triton's compiled kernels", nil},
	{"KAGENT_FORKSERVER", "0 starts every Python worker on its own instead of forking it from a server that imported torch once", nil},
	{"KAGENT_SANDBOX", "the OS sandbox of the processes that run candidates: on (default: required; exit code 4 where the machine cannot sandbox), auto (where the machine allows it, else unsandboxed with a warning), off", nil},
	{"KAGENT_SANDBOX_SKIP", "diagnosis only: sandbox layers to leave out (landlock, seccomp); weakens the sandbox", nil},
	{"KAGENT_MEMORY_LIMIT", "device memory the workers plan with (bytes, or with a K/M/G/T suffix): fewer stored draws, or a clear refusal, where the problem does not fit; for a GPU shared with other jobs", nil},
	{"KAGENT_DEVICE_BUFFERS", "0 gives the candidates' runners page-locked host buffers instead of shared device memory (the default on NVIDIA, much faster on large problems: docs/results/2026-12-04-spare-runner; it falls back to host buffers where it fails)", nil},
	{"KAGENT_TIMING_CLOCK", "profiler times each call by the CUDA profiler's records of its own kernels (NVIDIA, opt-in); by default device events after a hold, less the events' own span", nil},
	{"KAGENT_FUSED", "0 turns off the judge's fused Triton reductions (comparisons, checksums of large outputs) and uses torch's", nil},
	{"KAGENT_COMPILE_AHEAD", "1 compiles a round's knob variants in one batch before their verifications (off by default: on an H200 it cost about what it saved; docs/tuning.md)", nil},
	{"KAGENT_SPARE_RUNNER", "0 turns off starting the next candidate's runner during a verification (default: on for GPUs, off for the CPU); 1 turns it on", nil},
	{"KAGENT_SPARE_LEND_SHARE", "with device buffers (the default on NVIDIA), the share of the device (0 to 1, default 0.05) below which the next candidate's runner is lent its device buffers ahead", nil},
	{"KAGENT_FREEZE_BASELINE", "0 keeps the torch.compile baseline's objects in sight of the judge's full garbage collections (by default they are frozen once it is built while no candidate is loaded, and given back when the problem is unloaded)", nil},
	{"KAGENT_TRACE", "1 writes each worker and runner operation's duration to their stderr (see KAGENT_WORKER_STDERR): where a candidate's verification and timing go", nil},
	{"KAGENT_WORKER_STDERR", "a directory that keeps every worker's and runner server's stderr in its own file (SIGUSR1 makes a harness process write its Python stacks there)", nil},
	{"KAGENT_INPROCESS", "1 runs candidates inside the judging worker (harness debugging only: every isolation guarantee is lost)", nil},
	{"KAGENT_SWEEP_BACKEND", "kagent sweep --backend: local, slurm or k8s", nil},
	{"KAGENT_SLURM_PARTITION", "kagent sweep: sbatch --partition", nil},
	{"KAGENT_SLURM_TIME", "kagent sweep: sbatch --time of each task", nil},
	{"KAGENT_SLURM_GRES", "kagent sweep: sbatch --gres (default gpu:1)", nil},
	{"KAGENT_SLURM_CPUS", "kagent sweep: sbatch --cpus-per-task", nil},
	{"KAGENT_SLURM_MEM", "kagent sweep: sbatch --mem", nil},
	{"KAGENT_SLURM_MAX_PARALLEL", "kagent sweep: tasks running at once (--array=...%N)", nil},
	{"KAGENT_SLURM_JOB_NAME", "kagent sweep: sbatch --job-name", nil},
	{"KAGENT_SLURM_ARGS", "kagent sweep: more sbatch arguments, comma-separated", nil},
	{"KAGENT_K8S_IMAGE", "kagent sweep --backend k8s: container image", nil},
	{"KAGENT_K8S_NAMESPACE", "kagent sweep --backend k8s: the Job's namespace", nil},
	{"KAGENT_K8S_PVC", "kagent sweep --backend k8s: PersistentVolumeClaim holding the sweep dir", nil},
	{"KAGENT_K8S_SECRET", "kagent sweep --backend k8s: Secret whose keys become environment variables", nil},
	{"KAGENT_LOG_LEVEL", "log level: debug, info, warn, error", nil},
	{"KAGENT_PROGRESS", "0 keeps optimize, eval, profile and sweep to plain progress lines on a terminal too (as --no-progress; they are plain in a pipe and where CI is set); otherwise a status line on stderr says what runs, rewritten in place", nil},
}

// ApplyEnv applies every set KAGENT_* variable to cfg, reading them through
// getenv (os.Getenv in production).
func ApplyEnv(cfg *Config, getenv func(string) string) error {
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, e := range Env {
		v := strings.TrimSpace(getenv(e.Name))
		if v == "" || e.apply == nil {
			continue
		}
		if err := e.apply(cfg, v); err != nil {
			return fmt.Errorf("%w: %s=%q: %v", ErrInvalid, e.Name, v, err)
		}
	}
	return nil
}

func intSetter(field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("want a whole number")
		}
		*field(c) = n
		return nil
	}
}

func floatSetter(field func(*Config) *float64) func(*Config, string) error {
	return func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("want a number")
		}
		*field(c) = f
		return nil
	}
}

// kwargsSetter merges "key=value,key=value" into PlatformKwargs.
func kwargsSetter(c *Config, v string) error {
	for _, pair := range strings.Split(v, ",") {
		key, value, ok := strings.Cut(strings.TrimSpace(pair), "=")
		key = strings.TrimSpace(key)
		if !ok || key == "" {
			return fmt.Errorf("want key=value pairs separated by commas, got %q", pair)
		}
		if c.PlatformKwargs == nil {
			c.PlatformKwargs = map[string]string{}
		}
		c.PlatformKwargs[key] = strings.TrimSpace(value)
	}
	return nil
}

func durationSetter(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("want a duration such as 90s or 10m")
		}
		*field(c) = d
		return nil
	}
}
