package rocm

import (
	"slices"
	"testing"
)

// rocminfo is the agent listing of a machine with one CPU and two GPUs.
const rocminfo = `*******
Agent 1
*******
  Name:                    AMD EPYC 9654 96-Core Processor
  Marketing Name:          AMD EPYC 9654 96-Core Processor
  Device Type:             CPU
*******
Agent 2
*******
  Name:                    gfx942
  Marketing Name:          AMD Instinct MI300X
  Device Type:             GPU
*******
Agent 3
*******
  Name:                    gfx942
  Marketing Name:          AMD Instinct MI300X
  Device Type:             GPU
`

func TestFirstGPU(t *testing.T) {
	name, target := firstGPU(rocminfo)
	if name != "AMD Instinct MI300X" || target != "gfx942" {
		t.Fatalf("firstGPU = %q, %q", name, target)
	}
	if n, _ := firstGPU("Device Type: CPU\n"); n != "" {
		t.Fatalf("a CPU-only listing gave %q", n)
	}
}

func TestGPUAgents(t *testing.T) {
	if ids := gpuAgents(rocminfo); !slices.Equal(ids, []string{"0", "1"}) {
		t.Errorf("gpuAgents = %q", ids)
	}
	if ids := gpuAgents("Device Type: CPU\n"); len(ids) != 0 {
		t.Errorf("a CPU-only listing gave %q", ids)
	}
}
