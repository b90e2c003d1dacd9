// Package cuda is the NVIDIA platform: warm Python workers (one per visible
// GPU, plus warm spares) verify and time candidates with CUDA events, Nsight
// Compute profiles them, and the specs come from the device torch reports.
package cuda

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/kagent-dev/kagent/agent/kerneldir"
	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/platform/worker"
	"github.com/kagent-dev/kagent/profiler/ncu"
	"github.com/kagent-dev/kagent/roofline"
)

// Name is the registry name.
const Name = "cuda"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform is the NVIDIA platform.
type Platform struct {
	cfg   platform.Config
	probe platform.Probe
	db    *roofline.Database
}

// New builds the platform; nothing runs until Open.
func New(cfg platform.Config) (*Platform, error) {
	db := roofline.Default()
	if cfg.SpecsFile != "" {
		var err error
		if db, err = db.LoadOverrides(cfg.SpecsFile); err != nil {
			return nil, err
		}
	}
	return &Platform{cfg: cfg, probe: platform.SystemProbe(), db: db}, nil
}

// Name returns "cuda".
func (p *Platform) Name() string { return Name }

// Executes is true.
func (p *Platform) Executes() bool { return true }

func (p *Platform) available() error {
	if ok, evidence := p.probe.HasNVIDIA(); !ok {
		return &platform.UnavailableError{Platform: Name, Missing: "no NVIDIA driver found (" + evidence + ")",
			Hint: "run on a machine with an NVIDIA GPU, or choose another platform with --platform (rocm, xpu, cpu, noop)"}
	}
	return nil
}

// GPUs lists the visible GPU ids: CUDA_VISIBLE_DEVICES when set, else the
// indices nvidia-smi reports.
func GPUs(ctx context.Context) []string {
	if v, ok := os.LookupEnv("CUDA_VISIBLE_DEVICES"); ok && strings.TrimSpace(v) != "" {
		var ids []string
		for _, id := range strings.Split(v, ",") {
			if id = strings.TrimSpace(id); id != "" {
				ids = append(ids, id)
			}
		}
		return ids
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=index", "--format=csv,noheader").Output()
	if err != nil {
		return []string{"0"}
	}
	var ids []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ids = append(ids, l)
		}
	}
	if len(ids) == 0 {
		return []string{"0"}
	}
	return ids
}

// Open starts one worker per visible GPU and binds them to the task.
func (p *Platform) Open(ctx context.Context, task *kerneldir.Task) (platform.Session, error) {
	if task == nil {
		return nil, fmt.Errorf("cuda: open: no kernel dir")
	}
	if err := p.available(); err != nil {
		return nil, err
	}
	var slots [][]string
	for _, id := range GPUs(ctx) {
		slots = append(slots, []string{"CUDA_VISIBLE_DEVICES=" + id})
	}
	return worker.OpenSession(ctx, task, worker.SessionConfig{
		Python: p.cfg.Python, Device: "cuda", Slots: slots, Spare: true, Isolate: true,
		Engine: worker.EngineOptions{
			VerifyTimeout: p.cfg.VerifyTimeout, BenchTimeout: p.cfg.BenchTimeout,
			RequireTriton: true, Representative: true, WarmupMS: p.cfg.WarmupMS, RepMS: p.cfg.RepMS,
		},
		Specs:    p.specsFor,
		Profiler: p.ncuProfiler,
	})
}

// specsFor resolves the GPU a worker runs on.
func (p *Platform) specsFor(h worker.Hello) (roofline.Specs, error) {
	if p.cfg.GPUName != "" {
		return p.db.Lookup(p.cfg.GPUName)
	}
	return p.db.LookupDevice(roofline.Device{Name: h.Device.Name, Target: h.Device.Capability, Units: h.Device.SMCount})
}

// Specs returns the configured GPU, else the first GPU nvidia-smi names.
func (p *Platform) Specs(ctx context.Context) (roofline.Specs, error) {
	if p.cfg.GPUName != "" {
		return p.db.Lookup(p.cfg.GPUName)
	}
	if err := p.available(); err != nil {
		return roofline.Specs{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nvidia-smi", "--query-gpu=name", "--format=csv,noheader").Output()
	if err != nil {
		return roofline.Specs{}, fmt.Errorf("cuda: read the GPU name with nvidia-smi: %w (or set gpu_name)", err)
	}
	name, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return p.db.Lookup(strings.TrimSpace(name))
}

// Analyzer places ncu metrics on the roofline (95% counts as at the roofline).
func (p *Platform) Analyzer() platform.RooflineAnalyzer {
	return roofline.Analyzer{Config: roofline.DefaultConfig("ncu")}
}

// Guidance is the platform's advice for prompts.
func (p *Platform) Guidance() string {
	return "NVIDIA GPU (CUDA): 32-wide warps; Hopper (sm_90) has TMA and wgmma, which Triton uses for tl.dot with num_stages >= 3."
}

// NCUProfiler returns the factory of Nsight Compute profilers that cuda
// sessions use, for callers that build worker sessions themselves.
func NCUProfiler(cfg platform.Config) func(worker.ProfilerSetup) (platform.Profiler, error) {
	return (&Platform{cfg: cfg}).ncuProfiler
}

// ncuProfiler builds the Nsight Compute profiler of one GPU slot.
func (p *Platform) ncuProfiler(s worker.ProfilerSetup) (platform.Profiler, error) {
	gpu := ""
	for _, kv := range s.SlotEnv {
		if v, ok := strings.CutPrefix(kv, "CUDA_VISIBLE_DEVICES="); ok {
			gpu = v
		}
	}
	return ncu.New(ncu.Config{
		NCUPath: p.cfg.NCUPath, Python: p.cfg.Python, HarnessDir: s.HarnessDir,
		ProblemPath: s.Load.ProblemPath, Entry: s.Entry, DType: s.Load.DType, Seeds: s.Load.Seeds, TF32: s.Load.TF32,
		GPU: gpu, Timeout: p.cfg.ProfileTimeout, Env: append(append([]string(nil), s.Env...), s.SlotEnv...),
		WorkDir: p.cfg.WorkDir,
	})
}

// Interface guards
var _ platform.Platform = (*Platform)(nil)
