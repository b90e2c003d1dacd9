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
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kagent-dev/kagent/agent/kerneldir"
	"github.com/kagent-dev/kagent/platform"
	"github.com/kagent-dev/kagent/platform/worker"
	"github.com/kagent-dev/kagent/profiler/ncu"
	"github.com/kagent-dev/kagent/profiler/rocprof"
	"github.com/kagent-dev/kagent/profiler/synthetic"
	"github.com/kagent-dev/kagent/roofline"
)

// Name is the registry name.
const Name = "rocm"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform is the AMD platform.
type Platform struct {
	cfg   platform.Config
	probe platform.Probe
	db    *roofline.Database
}

// New builds the platform; it does not touch the GPU until Open.
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

// Name returns "rocm".
func (p *Platform) Name() string { return Name }

// Executes is true: this platform runs kernels.
func (p *Platform) Executes() bool { return true }

func (p *Platform) available() error {
	if ok, evidence := p.probe.HasROCm(); !ok {
		return &platform.UnavailableError{Platform: Name, Missing: fmt.Sprintf("ROCm not found (%s)", evidence),
			Hint: "run on a machine with an AMD GPU and ROCm installed, or choose another platform with --platform (cuda, cpu, noop)"}
	}
	return nil
}

// GPUs lists the visible GPU ids: HIP_VISIBLE_DEVICES (or ROCR_VISIBLE_DEVICES)
// when set, else one id per GPU agent rocminfo lists.
func GPUs(ctx context.Context) []string {
	for _, v := range []string{"HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"} {
		if s := strings.TrimSpace(os.Getenv(v)); s != "" {
			var ids []string
			for _, id := range strings.Split(s, ",") {
				if id = strings.TrimSpace(id); id != "" {
					ids = append(ids, id)
				}
			}
			return ids
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rocminfo").Output()
	if err != nil {
		return []string{"0"}
	}
	var ids []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, "Device Type:") && strings.Contains(l, "GPU") {
			ids = append(ids, fmt.Sprint(len(ids)))
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
		return nil, fmt.Errorf("rocm: open: no kernel dir")
	}
	if err := p.available(); err != nil {
		return nil, err
	}
	var slots [][]string
	for _, id := range GPUs(ctx) {
		slots = append(slots, []string{"HIP_VISIBLE_DEVICES=" + id})
	}
	return worker.OpenSession(ctx, task, worker.SessionConfig{
		Python: p.cfg.Python, Device: "cuda", Slots: slots, Spare: true, Isolate: true,
		Engine: worker.EngineOptions{
			VerifyTimeout: p.cfg.VerifyTimeout, BenchTimeout: p.cfg.BenchTimeout,
			RequireTriton: true, Representative: true, WarmupMS: p.cfg.WarmupMS, RepMS: p.cfg.RepMS,
		},
		Specs:    p.specsFor,
		Profiler: p.rocprofProfiler,
	})
}

func (p *Platform) specsFor(h worker.Hello) (roofline.Specs, error) {
	if p.cfg.GPUName != "" {
		return p.db.Lookup(p.cfg.GPUName)
	}
	return p.db.LookupDevice(roofline.Device{Name: h.Device.Name, Units: h.Device.SMCount})
}

// rocprofProfiler builds the rocprofv3 profiler of one GPU slot. Every pass
// runs the profile wrapper (the same script the ncu profiler uses: inputs and
// callable built by the harness as the verifier does, a few warm-up calls,
// then the profiled call, which is the last dispatches of the candidate's
// kernels).
func (p *Platform) rocprofProfiler(s worker.ProfilerSetup) (platform.Profiler, error) {
	cfg := rocprof.Config{Specs: s.Specs, WorkDir: p.cfg.WorkDir}
	if err := cfg.ApplyKwargs(p.cfg.Kwargs); err != nil {
		return nil, err
	}
	python := p.cfg.Python
	if python == "" {
		python = "python3"
	}
	env := append(append([]string(nil), s.Env...), s.SlotEnv...)
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
			Entry: s.Entry, DType: s.Load.DType, Seeds: s.Load.Seeds, TF32: s.Load.TF32, Warmup: 3}.Render()
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
		names := ncu.KernelNames(src)
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

// Specs looks up the configured GPU name, else the first GPU rocminfo names.
func (p *Platform) Specs(ctx context.Context) (roofline.Specs, error) {
	if p.cfg.GPUName != "" {
		return p.db.Lookup(p.cfg.GPUName)
	}
	if err := p.available(); err != nil {
		return roofline.Specs{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "rocminfo").Output()
	if err != nil {
		return roofline.Specs{}, fmt.Errorf("rocm: read the GPU name with rocminfo: %w (or set gpu_name)", err)
	}
	name, target := firstGPU(string(out))
	if name == "" {
		return roofline.Specs{}, fmt.Errorf("rocm: rocminfo lists no GPU agent (set gpu_name)")
	}
	return p.db.LookupDevice(roofline.Device{Name: name, Target: target})
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

// Guidance is the platform's advice for prompts.
func (p *Platform) Guidance() string {
	return "AMD GPUs run 64-wide wavefronts: use block sizes in multiples of 64 and num_warps 4 or 8."
}

// Interface guards
var _ platform.Platform = (*Platform)(nil)
