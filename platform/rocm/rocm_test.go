package rocm

import "testing"

func TestFirstGPU(t *testing.T) {
	out := `*******
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
`
	name, target := firstGPU(out)
	if name != "AMD Instinct MI300X" || target != "gfx942" {
		t.Fatalf("firstGPU = %q, %q", name, target)
	}
	if n, _ := firstGPU("Device Type: CPU\n"); n != "" {
		t.Fatalf("a CPU-only listing gave %q", n)
	}
}
