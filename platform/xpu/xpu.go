// Package xpu is the Intel GPU platform: warm Python workers on torch's xpu
// device verify and time candidates (XPU events around each call), and the
// roofline is synthetic: measured time against the bytes and FLOPs counted
// from the problem's tensors, no hardware counters.
//
// Not yet run on Intel hardware: the worker path is the one proven on
// NVIDIA with the device calls mapped to torch.xpu, and the GPU listing
// reads xpu-smi's discovery dump.
package xpu

import (
	"strings"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/gpu"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/roofline"
)

// Name is the registry name.
const Name = "xpu"

// slotEnv pins a worker to one Intel GPU (Level Zero's device mask).
const slotEnv = "ZE_AFFINITY_MASK"

func init() {
	platform.Register(Name, func(cfg platform.Config) (platform.Platform, error) { return New(cfg) })
}

// Platform is the Intel GPU platform.
type Platform struct {
	cfg platform.Config
	// Stack supplies Open, OpenSlot, Slots, Specs and Executes.
	gpu.Stack
}

// New builds the platform; nothing runs until Open.
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
		Probe:   platform.SystemProbe().HasXPU,
		Missing: "no Intel GPU compute stack found",
		Hint:    "run on a machine with an Intel GPU and its oneAPI runtime, or choose another platform with --platform (cuda, rocm, cpu, noop)",
		GPUs:    gpus,
		SlotEnv: slotEnv,
		Device: func(h worker.Hello) roofline.Device {
			return roofline.Device{Name: h.Device.Name, Units: h.Device.SMCount}
		},
		NameTool:    []string{"xpu-smi", "discovery", "--dump", "2"},
		FirstGPU:    firstGPU,
		TorchDevice: "xpu",
	}
	return p, nil
}

// gpus finds the visible Intel GPUs: ZE_AFFINITY_MASK, else the device ids
// of xpu-smi's discovery dump.
var gpus = gpu.Lister{
	Env:   []string{slotEnv},
	Tool:  []string{"xpu-smi", "discovery", "--dump", "1"},
	Parse: dumpValues,
}

// dumpValues reads the values of a one-column xpu-smi dump (a header line,
// then one value per device).
func dumpValues(out string) []string {
	lines := gpu.Lines(out)
	if len(lines) > 0 && !strings.ContainsAny(lines[0][:1], "0123456789") {
		lines = lines[1:]
	}
	var vals []string
	for _, l := range lines {
		vals = append(vals, strings.Trim(l, `" `))
	}
	return vals
}

// firstGPU is the first device name of xpu-smi's discovery dump.
func firstGPU(out string) (roofline.Device, error) {
	names := gpu.Lines(out)
	if len(names) > 1 {
		names = names[1:] // the header
	}
	if len(names) == 0 {
		return roofline.Device{}, nil
	}
	return roofline.Device{Name: strings.Trim(names[0], `" `)}, nil
}

// Name returns "xpu".
func (p *Platform) Name() string { return Name }

// Analyzer is the synthetic roofline analyzer (85% counts as at the roofline).
func (p *Platform) Analyzer() platform.RooflineAnalyzer {
	return roofline.Analyzer{Config: roofline.DefaultConfig("synthetic")}
}

// Interface guards
var _ platform.Platform = (*Platform)(nil)
