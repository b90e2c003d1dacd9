package platform

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Probe is what detection looks at; tests replace it.
type Probe struct {
	LookPath func(string) (string, error)
	Stat     func(string) (os.FileInfo, error)
	Getenv   func(string) string
}

// SystemProbe looks at the real machine.
func SystemProbe() Probe {
	return Probe{LookPath: exec.LookPath, Stat: os.Stat, Getenv: os.Getenv}
}

// HasNVIDIA reports whether the machine shows an NVIDIA GPU stack, and the
// evidence found.
func (p Probe) HasNVIDIA() (bool, string) {
	if _, err := p.Stat("/dev/nvidiactl"); err == nil {
		return true, "/dev/nvidiactl"
	}
	if path, err := p.LookPath("nvidia-smi"); err == nil {
		return true, path
	}
	return false, "no /dev/nvidiactl, nvidia-smi not on PATH"
}

// HasROCm reports whether the machine shows an AMD ROCm stack.
func (p Probe) HasROCm() (bool, string) {
	if _, err := p.Stat("/dev/kfd"); err == nil {
		return true, "/dev/kfd"
	}
	if path, err := p.LookPath("rocminfo"); err == nil {
		return true, path
	}
	return false, "no /dev/kfd, rocminfo not on PATH"
}

// HasXPU reports whether the machine shows an Intel GPU compute stack.
func (p Probe) HasXPU() (bool, string) {
	for _, tool := range []string{"xpu-smi", "sycl-ls"} {
		if path, err := p.LookPath(tool); err == nil {
			return true, path
		}
	}
	if p.Getenv("ZE_AFFINITY_MASK") != "" {
		return true, "ZE_AFFINITY_MASK"
	}
	return false, "xpu-smi and sycl-ls not on PATH"
}

// Detect picks the platform of this machine: cuda, rocm or xpu, in that order.
func Detect(p Probe) (string, error) {
	var seen []string
	for _, c := range []struct {
		name string
		has  func() (bool, string)
	}{{"cuda", p.HasNVIDIA}, {"rocm", p.HasROCm}, {"xpu", p.HasXPU}} {
		ok, evidence := c.has()
		if ok {
			return c.name, nil
		}
		seen = append(seen, c.name+": "+evidence)
	}
	return "", fmt.Errorf("%w (%s); pass --platform cpu to run on the CPU or --strategy noop for a dry run", ErrNoPlatform, strings.Join(seen, "; "))
}
