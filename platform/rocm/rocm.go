// Package rocm is the AMD platform: warm Python workers on torch's HIP
// device (one per visible GPU, plus warm spares) verify and time candidates,
// and rocprofv3 profiles them in four counter passes, falling back to the
// synthetic roofline for the rest of the run when a pass fails or hangs.
//
// Not yet run on real AMD hardware: the worker path is the one proven on
// NVIDIA (torch exposes HIP as the "cuda" device), and the profiler is
// tested against recorded CSVs and fake rocprofv3 executables.
package rocm

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/gpu"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/profiler/kernels"
	"github.com/kagent-kernels/kagent/profiler/ncu"
	"github.com/kagent-kernels/kagent/profiler/rocprof"
	"github.com/kagent-kernels/kagent/profiler/synthetic"
	"github.com/kagent-kernels/kagent/roofline"
)

// Name is the registry name.
const Name = "rocm"

// slotEnv pins a worker, and its rocprofv3 passes, to one GPU.
const slotEnv = "HIP_VISIBLE_DEVICES"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform is the AMD platform.
type Platform struct {
	cfg platform.Config
	// Stack supplies Open, OpenSlot, Slots, Specs and Executes.
	gpu.Stack
}

// New builds the platform; it does not touch the GPU until Open.
func New(cfg platform.Config) (*Platform, error) {
	db, err := gpu.Database(cfg.SpecsFile)
	if err != nil {
		return nil, err
	}
	p := &Platform{cfg: cfg}
	p.Stack = gpu.Stack{
		Name:    Name,
		Config:  cfg,
		DB:      db,
		Probe:   platform.SystemProbe().HasROCm,
		Missing: "ROCm not found",
		Hint:    "run on a machine with an AMD GPU and ROCm installed, or choose another platform with --platform (cuda, cpu, noop)",
		GPUs:    gpus,
		SlotEnv: slotEnv,
		// The handshake's capability is torch's "major.minor", not a gfx
		// target: the name and CU count resolve the GPU.
		Device: func(h worker.Hello) roofline.Device {
			return roofline.Device{Name: h.Device.Name, Units: h.Device.SMCount}
		},
		NameTool: []string{"rocminfo"},
		FirstGPU: func(out string) (roofline.Device, error) {
			name, target := firstGPU(out)
			if name == "" {
				return roofline.Device{}, fmt.Errorf("rocm: rocminfo lists no GPU agent (set gpu_name)")
			}
			return roofline.Device{Name: name, Target: target}, nil
		},
		Profiler: p.rocprofProfiler,
	}
	return p, nil
}

// Name returns "rocm".
func (p *Platform) Name() string { return Name }

// gpus finds the visible AMD GPUs.
var gpus = gpu.Lister{
	Env:   []string{"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"},
	Tool:  []string{"rocminfo"},
	Parse: gpuAgents,
}

// GPUs lists the visible GPU ids: HIP_VISIBLE_DEVICES (or ROCR_VISIBLE_DEVICES)
// when set, else one id per GPU agent rocminfo lists.
func GPUs(ctx context.Context) []string { return gpus.IDs(ctx) }

// gpuAgents numbers the GPU agents in rocminfo's output from 0.
func gpuAgents(rocminfo string) []string {
	var ids []string
	for _, l := range strings.Split(rocminfo, "\n") {
		if strings.Contains(l, "Device Type:") && strings.Contains(l, "GPU") {
			ids = append(ids, fmt.Sprint(len(ids)))
		}
	}
	return ids
}

// rocprofProfiler builds the rocprofv3 profiler of one GPU slot. Every pass
// runs the profile wrapper (the same script the ncu profiler uses: inputs and
// callable built by the harness as the verifier does, a few warm-up calls,
// then the profiled call, which is the last dispatches of the candidate's
// kernels).
func (p *Platform) rocprofProfiler(s worker.ProfilerSetup) (platform.Profiler, error) {
	cfg := rocprof.Config{Specs: s.Specs, WorkDir: p.cfg.WorkDir, Logger: s.Logger}
	if err := cfg.ApplyKwargs(p.cfg.Kwargs); err != nil {
		return nil, err
	}
	python := p.cfg.Python
	if python == "" {
		python = "python3"
	}
	env := append(append([]string(nil), s.Env...), s.SlotEnv...)
	// rocprofv3 and the wrapper run outside the sandbox (not tried on AMD
	// hardware), with the runners' scrubbed environment: no API key of
	// kagent's reaches the candidate.
	cfg.Isolate = worker.ProfileOutside(worker.Options{Device: "cuda", Env: env}, s.HarnessDir)
	cfg.Prepare = func(ctx context.Context, c platform.Candidate) (rocprof.Request, error) {
		src := c.Source
		if src == "" {
			b, err := os.ReadFile(c.Path)
			if err != nil {
				return rocprof.Request{}, fmt.Errorf("rocprof: read %s: %w", c.Path, err)
			}
			src = string(b)
		}
		script, err := ncu.Wrapper{HarnessDir: s.HarnessDir, ProblemPath: s.Load.ProblemPath, CandidatePath: c.Path,
			Entry: s.Entry, DType: s.Load.DType, Seeds: s.Load.Seeds, TF32: s.Load.TF32, ShapeOverride: s.Load.Size,
			Warmup: 3}.Render()
		if err != nil {
			return rocprof.Request{}, err
		}
		dir, err := os.MkdirTemp(p.cfg.WorkDir, "rocprof-wrapper-")
		if err != nil {
			return rocprof.Request{}, fmt.Errorf("rocprof: %w", err)
		}
		path := filepath.Join(dir, "wrapper.py")
		if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
			return rocprof.Request{}, fmt.Errorf("rocprof: %w", err)
		}
		names := kernels.Names(src)
		req := rocprof.Request{ID: c.ID, Wrapper: rocprof.Wrapper{Python: python, Script: path, Env: env, Dir: dir},
			Filter: rocprof.Filter{Names: names}, Window: rocprof.Window{Last: max(len(names), 1)}, DType: s.Load.DType}
		if s.Info != nil {
			if info, err := s.Info(ctx); err == nil {
				for _, t := range info.Inputs {
					req.Synthetic.Work.Inputs = append(req.Synthetic.Work.Inputs, synthetic.Tensor{Shape: t.Shape, DType: t.DType})
				}
				for _, t := range info.Outputs {
					req.Synthetic.Work.Outputs = append(req.Synthetic.Work.Outputs, synthetic.Tensor{Shape: t.Shape, DType: t.DType})
				}
				if info.FLOPs != nil {
					req.Synthetic.Work.FLOPs = *info.FLOPs
				}
			}
		}
		return req, nil
	}
	return rocprof.New(cfg)
}

// firstGPU returns the marketing name and gfx target of the first GPU agent
// in rocminfo's output (CPU agents come first and are skipped).
func firstGPU(rocminfo string) (name, target string) {
	var curName, curTarget string
	for _, l := range strings.Split(rocminfo, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "Marketing Name:"):
			curName = strings.TrimSpace(strings.TrimPrefix(l, "Marketing Name:"))
		case strings.HasPrefix(l, "Name:"):
			curTarget = strings.TrimSpace(strings.TrimPrefix(l, "Name:"))
		case strings.HasPrefix(l, "Device Type:"):
			if strings.Contains(l, "GPU") {
				return curName, curTarget
			}
			curName, curTarget = "", ""
		}
	}
	return "", ""
}

// Analyzer places rocprof metrics on the roofline (85% counts as at the roofline).
func (p *Platform) Analyzer() platform.RooflineAnalyzer {
	return roofline.Analyzer{Config: roofline.DefaultConfig("rocprof")}
}

// Interface guards
var _ platform.Platform = (*Platform)(nil)
