// Package cuda is the NVIDIA platform: warm Python workers (one per visible
// GPU, plus warm spares) verify and time candidates with CUDA events, Nsight
// Compute profiles them, and the specs come from the device torch reports.
package cuda

import (
	"context"
	"runtime"
	"strings"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/gpu"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/profiler/ncu"
	"github.com/kagent-kernels/kagent/roofline"
)

// Name is the registry name.
const Name = "cuda"

// slotEnv pins a worker, and its ncu, to one GPU.
const slotEnv = "CUDA_VISIBLE_DEVICES"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform is the NVIDIA platform.
type Platform struct {
	cfg platform.Config
	// ncuAhead starts each profile's process ahead (platform_kwargs.ncu_ahead).
	ncuAhead bool
	// ncuSandbox says where profiles run (platform_kwargs.ncu_sandbox).
	ncuSandbox string
	// Stack supplies Open, OpenSlot, Slots, Specs and Executes.
	gpu.Stack
}

// New builds the platform; nothing runs until Open.
func New(cfg platform.Config) (*Platform, error) {
	db, err := gpu.Database(cfg.SpecsFile)
	if err != nil {
		return nil, err
	}
	ahead, err := ncu.AheadFromKwargs(cfg.Kwargs, runtime.NumCPU())
	if err != nil {
		return nil, err
	}
	where, err := ncu.SandboxFromKwargs(cfg.Kwargs)
	if err != nil {
		return nil, err
	}
	p := &Platform{cfg: cfg, ncuAhead: ahead, ncuSandbox: where}
	p.Stack = gpu.Stack{
		Name:    Name,
		Config:  cfg,
		DB:      db,
		Probe:   platform.SystemProbe().HasNVIDIA,
		Missing: "no NVIDIA driver found",
		Hint:    "run on a machine with an NVIDIA GPU, or choose another platform with --platform (rocm, xpu, cpu, noop)",
		GPUs:    gpus,
		SlotEnv: slotEnv,
		Device: func(h worker.Hello) roofline.Device {
			return roofline.Device{Name: h.Device.Name, Target: h.Device.Capability, Units: h.Device.SMCount}
		},
		NameTool: []string{"nvidia-smi", "--query-gpu=name", "--format=csv,noheader"},
		FirstGPU: firstGPU,
		Profiler: p.ncuProfiler,
	}
	return p, nil
}

// firstGPU is the first name in nvidia-smi's list.
func firstGPU(out string) (roofline.Device, error) {
	name, _, _ := strings.Cut(strings.TrimSpace(out), "\n")
	return roofline.Device{Name: strings.TrimSpace(name)}, nil
}

// Name returns "cuda".
func (p *Platform) Name() string { return Name }

// gpus finds the visible NVIDIA GPUs.
var gpus = gpu.Lister{
	Env:   []string{slotEnv},
	Tool:  []string{"nvidia-smi", "--query-gpu=index", "--format=csv,noheader"},
	Parse: gpu.Lines,
}

// GPUs lists the visible GPU ids: CUDA_VISIBLE_DEVICES when set, else the
// indices nvidia-smi reports.
func GPUs(ctx context.Context) []string { return gpus.IDs(ctx) }

// Analyzer places ncu metrics on the roofline (95% counts as at the roofline).
func (p *Platform) Analyzer() platform.RooflineAnalyzer {
	return roofline.Analyzer{Config: roofline.DefaultConfig("ncu")}
}

// NCUProfiler returns the factory of Nsight Compute profilers that cuda
// sessions use, for callers that build worker sessions themselves. Their
// profiles start no process ahead.
func NCUProfiler(cfg platform.Config) func(worker.ProfilerSetup) (platform.Profiler, error) {
	return (&Platform{cfg: cfg}).ncuProfiler
}

// ncuProfiler builds the Nsight Compute profiler of one GPU slot.
func (p *Platform) ncuProfiler(s worker.ProfilerSetup) (platform.Profiler, error) {
	dev := ""
	for _, kv := range s.SlotEnv {
		if v, ok := strings.CutPrefix(kv, slotEnv+"="); ok {
			dev = v
		}
	}
	env := append(append([]string(nil), s.Env...), s.SlotEnv...)
	isolate, python, sandboxed, err := p.ncuIsolation(s, dev, env)
	if err != nil {
		return nil, err
	}
	if s.Logger != nil {
		s.Logger.Debug("ncu profiles", "gpu", dev, "sandboxed", sandboxed)
	}
	return ncu.New(ncu.Config{
		NCUPath: p.cfg.NCUPath, Python: python, HarnessDir: s.HarnessDir,
		ProblemPath: s.Load.ProblemPath, Entry: s.Entry, DType: s.Load.DType, Seeds: s.Load.Seeds, TF32: s.Load.TF32,
		ShapeOverride: s.Load.Size,
		GPU:           dev, Timeout: p.cfg.ProfileTimeout, Env: env,
		WorkDir: p.cfg.WorkDir, Ahead: p.ncuAhead, Logger: s.Logger, Isolate: isolate,
		Metrics: ncuMetrics(p.cfg.NCUMetrics),
	})
}

// ncuMetrics is the metric list of a profile_metrics setting (nil: the
// profiler's default, every metric).
func ncuMetrics(set string) []string {
	if set == "roofline" {
		return ncu.RooflineOnlyMetrics()
	}
	return nil
}

// Interface guards
var _ platform.Platform = (*Platform)(nil)
