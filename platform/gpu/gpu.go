// Package gpu is what the GPU platforms that run candidates on warm Python
// workers (cuda, rocm) share: the GPU database with the configured
// overrides, the list of visible GPUs, the availability error, the GPU's
// specs, and a session of one worker per GPU. A platform describes its
// vendor stack in a Stack and forwards to it, keeping only what differs:
// names, environment variables, tools, profiler and guidance.
package gpu

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/roofline"
)

// toolTimeout bounds one run of a vendor tool (nvidia-smi, rocminfo).
const toolTimeout = 30 * time.Second

// Stack is a vendor's GPU stack as a worker-backed platform sees it. Its
// fields are what differs between vendors; its methods are the rest.
type Stack struct {
	// Name is the platform's registry name ("cuda"); it starts errors.
	Name string
	// Config is the platform's configuration.
	Config platform.Config
	// DB is the GPU database (see Database).
	DB *roofline.Database

	// Probe says whether the machine shows the stack, and the evidence
	// (platform.Probe.HasNVIDIA). When it does not, Missing says what is
	// absent ("no NVIDIA driver found"; the evidence follows in
	// parentheses) and Hint what to do about it.
	Probe   func() (bool, string)
	Missing string
	Hint    string

	// GPUs finds the visible GPUs; a worker runs on each, pinned to it by
	// SlotEnv=<id> (CUDA_VISIBLE_DEVICES).
	GPUs    Lister
	SlotEnv string
	// Device is what a worker's handshake says of its GPU, to look up in DB.
	Device func(worker.Hello) roofline.Device

	// NameTool is the command that names the machine's GPUs, and FirstGPU
	// reads the first one from its output (for Specs without gpu_name).
	NameTool []string
	FirstGPU func(out string) (roofline.Device, error)

	// Profiler builds the hardware profiler of one GPU slot; nil gives the
	// synthetic roofline (measured time against counted bytes and FLOPs).
	Profiler func(worker.ProfilerSetup) (platform.Profiler, error)

	// TorchDevice is torch's name for the GPU ("" = cuda, which torch uses
	// for NVIDIA and AMD GPUs alike; xpu for Intel).
	TorchDevice string
}

// Available returns a *platform.UnavailableError when the machine does not
// show the stack.
func (s *Stack) Available() error {
	if ok, evidence := s.Probe(); !ok {
		return &platform.UnavailableError{Platform: s.Name, Missing: s.Missing + " (" + evidence + ")", Hint: s.Hint}
	}
	return nil
}

// Executes is true: GPU platforms run kernels.
func (s *Stack) Executes() bool { return true }

// Open starts one worker per visible GPU and binds them to the task.
func (s *Stack) Open(ctx context.Context, task *kerneldir.Task) (platform.Session, error) {
	if err := s.check(task); err != nil {
		return nil, err
	}
	return s.openIDs(ctx, task, s.GPUs.IDs(ctx))
}

// Slots lists the visible GPU ids (for sweeps that run one problem per GPU).
func (s *Stack) Slots(ctx context.Context) []string { return s.GPUs.IDs(ctx) }

// OpenSlot starts workers on one GPU only and binds them to the task.
func (s *Stack) OpenSlot(ctx context.Context, task *kerneldir.Task, id string) (platform.Session, error) {
	if err := s.check(task); err != nil {
		return nil, err
	}
	return s.openIDs(ctx, task, []string{id})
}

// check is what every open needs first: a task and the vendor stack.
func (s *Stack) check(task *kerneldir.Task) error {
	if task == nil {
		return fmt.Errorf("%s: open: no kernel dir", s.Name)
	}
	return s.Available()
}

func (s *Stack) openIDs(ctx context.Context, task *kerneldir.Task, ids []string) (platform.Session, error) {
	var slots [][]string
	for _, id := range ids {
		slots = append(slots, []string{s.SlotEnv + "=" + id})
	}
	device := s.TorchDevice
	if device == "" {
		device = "cuda"
	}
	return worker.OpenSession(ctx, task, worker.SessionConfig{
		Python: s.Config.Python, Device: device, Slots: slots, Spare: true, Isolate: true,
		Engine: worker.EngineOptions{
			VerifyTimeout: s.Config.VerifyTimeout, BenchTimeout: s.Config.BenchTimeout, ProfileTimeout: s.Config.ProfileTimeout,
			RequireTriton: true, Representative: true, WarmupMS: s.Config.WarmupMS, RepMS: s.Config.RepMS,
		},
		Specs:    s.specsFor,
		Profiler: s.Profiler,
		Logger:   s.Config.Logger,
	})
}

// specsFor resolves the GPU a worker runs on.
func (s *Stack) specsFor(h worker.Hello) (roofline.Specs, error) {
	if s.Config.GPUName != "" {
		return s.DB.Lookup(s.Config.GPUName)
	}
	return s.DB.LookupDevice(s.Device(h))
}

// Specs returns the configured GPU (gpu_name), else the first GPU NameTool
// names.
func (s *Stack) Specs(ctx context.Context) (roofline.Specs, error) {
	if s.Config.GPUName != "" {
		return s.DB.Lookup(s.Config.GPUName)
	}
	if err := s.Available(); err != nil {
		return roofline.Specs{}, err
	}
	out, err := query(ctx, s.NameTool)
	if err != nil {
		return roofline.Specs{}, fmt.Errorf("%s: read the GPU name with %s: %w (or set gpu_name)", s.Name, s.NameTool[0], err)
	}
	d, err := s.FirstGPU(out)
	if err != nil {
		return roofline.Specs{}, err
	}
	return s.DB.LookupDevice(d)
}

// Database is the built-in GPU database with the overrides in specsFile
// ("" = none).
func Database(specsFile string) (*roofline.Database, error) {
	db := roofline.Default()
	if specsFile == "" {
		return db, nil
	}
	return db.LoadOverrides(specsFile)
}

// Lister finds the visible GPUs of one vendor.
type Lister struct {
	// Env are the variables that list the visible GPU ids, comma-separated;
	// the first that is set and not blank wins.
	Env []string
	// Tool is the command that lists the GPUs when no Env variable is set,
	// and Parse reads the ids from its output.
	Tool  []string
	Parse func(out string) []string
}

// IDs lists the visible GPU ids: from the Env variables, else from Tool;
// "0" when the tool fails or lists none.
func (l Lister) IDs(ctx context.Context) []string {
	for _, v := range l.Env {
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
	out, err := query(ctx, l.Tool)
	if err != nil {
		return []string{"0"}
	}
	if ids := l.Parse(out); len(ids) > 0 {
		return ids
	}
	return []string{"0"}
}

// Lines returns the lines of a tool's output, trimmed, without blank ones.
func Lines(out string) []string {
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// query runs a vendor tool (argv: the program and its arguments) for at
// most toolTimeout and returns its standard output.
func query(ctx context.Context, argv []string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, toolTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).Output()
	return string(out), err
}
