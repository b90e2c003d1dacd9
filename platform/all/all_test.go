package all

import (
	"slices"
	"testing"

	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/cpu"
	"github.com/kagent-kernels/kagent/platform/noop"
)

// TestRegistryIsTheConfigList: the platforms a config may name are the ones
// the binary registers, noop is the one that executes nothing and cpu the
// one that runs on CPU torch.
func TestRegistryIsTheConfigList(t *testing.T) {
	got := slices.Sorted(slices.Values(platform.Names()))
	want := slices.Sorted(slices.Values(configs.PlatformNames))
	if !slices.Equal(got, want) {
		t.Errorf("registry %v, configs.PlatformNames %v", got, want)
	}
	if configs.PlatformNoop != noop.Name {
		t.Errorf("configs.PlatformNoop %q, noop.Name %q", configs.PlatformNoop, noop.Name)
	}
	if configs.PlatformCPU != cpu.Name {
		t.Errorf("configs.PlatformCPU %q, cpu.Name %q", configs.PlatformCPU, cpu.Name)
	}
	if configs.CPUKwargTriton != cpu.KwargTriton || configs.CPUTritonAuto != cpu.TritonAuto ||
		configs.CPUTritonRequire != cpu.TritonRequire || configs.CPUTritonOff != cpu.TritonOff {
		t.Errorf("configs' cpu Triton policy names differ from the cpu platform's")
	}
	for _, n := range configs.GPUPlatforms {
		if !slices.Contains(configs.PlatformNames, n) {
			t.Errorf("GPU platform %q is not a platform", n)
		}
	}
}
