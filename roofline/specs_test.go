package roofline

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

func TestEmbeddedDatabase(t *testing.T) {
	db := Default()
	if db.Len() < 25 {
		t.Fatalf("embedded database has %d GPUs, want at least 25", db.Len())
	}
	all := db.All()
	if !sort.SliceIsSorted(all, func(i, j int) bool { return all[i].Name < all[j].Name }) {
		t.Error("All() is not sorted by name")
	}
	for _, s := range all {
		t.Run(s.Name, func(t *testing.T) {
			if err := s.Validate(); err != nil {
				t.Error(err)
			}
			if len(s.DeviceNames) == 0 {
				t.Error("no device names")
			}
			if s.Units <= 0 || s.WarpSize <= 0 || s.MemGB <= 0 || s.L2MB <= 0 || s.SmemKB <= 0 || s.TDPWatts <= 0 {
				t.Errorf("missing a structural figure: %+v", s)
			}
			if s.BF16TFLOPS <= 0 || s.FP16TFLOPS <= 0 {
				t.Error("missing fp16/bf16 peak")
			}
			if s.Source == "" {
				t.Error("no source")
			}
			switch s.Vendor {
			case "nvidia", "amd", "intel":
			default:
				t.Errorf("vendor %q", s.Vendor)
			}
			// Every identifier resolves back to this entry.
			for _, id := range s.identifiers() {
				got, err := db.Lookup(id)
				if err != nil || got.Name != s.Name {
					t.Errorf("Lookup(%q) = %q, %v", id, got.Name, err)
				}
			}
		})
	}
}

// TestH200DensePeaks guards against the sparse figures KernelAgent used (T7).
func TestH200DensePeaks(t *testing.T) {
	s, err := Lookup("NVIDIA H200")
	if err != nil {
		t.Fatal(err)
	}
	if s.MemBWGBs != 4800 || s.BF16TFLOPS != 989.4 || s.FP16TFLOPS != 989.4 || s.FP8TFLOPS != 1978.9 {
		t.Errorf("H200: bw %v bf16 %v fp16 %v fp8 %v", s.MemBWGBs, s.BF16TFLOPS, s.FP16TFLOPS, s.FP8TFLOPS)
	}
	if s.Units != 132 || s.L2MB != 60 || s.Target != "9.0" || s.WarpSize != 32 {
		t.Errorf("H200 structure: %+v", s)
	}
}

func TestRequiredGPUs(t *testing.T) {
	// The torch device names of the GPUs the project must know.
	for _, name := range []string{
		"NVIDIA A100-SXM4-40GB", "NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe",
		"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe", "NVIDIA H100 NVL",
		"NVIDIA H200", "NVIDIA H200 NVL", "NVIDIA B200", "NVIDIA GB200", "NVIDIA B300 SXM6 AC",
		"NVIDIA L40S", "NVIDIA L4", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 5090",
		"NVIDIA RTX 6000 Ada Generation", "NVIDIA RTX PRO 6000 Blackwell Server Edition",
		"AMD Instinct MI250X", "AMD Instinct MI300X", "AMD Instinct MI300A", "AMD Instinct MI325X",
		"AMD Instinct MI350X", "AMD Instinct MI355X", "AMD Radeon AI PRO R9700",
		"Radeon 8060S Graphics", "AMD Radeon RX 7900 XTX",
		"Intel(R) Data Center GPU Max 1550", "Intel(R) Data Center GPU Max 1100",
		"Intel(R) Arc(TM) B580 Graphics",
	} {
		if _, err := Lookup(name); err != nil {
			t.Errorf("Lookup(%q): %v", name, err)
		}
	}
}

func TestLookup(t *testing.T) {
	tests := []struct {
		query  Device
		want   string // entry name; "" = error
		errHas []string
	}{
		// exact torch names
		{query: Device{Name: "NVIDIA H100 80GB HBM3"}, want: "NVIDIA H100 SXM"},
		{query: Device{Name: "NVIDIA H100 PCIe"}, want: "NVIDIA H100 PCIe"},
		{query: Device{Name: "NVIDIA H100 NVL"}, want: "NVIDIA H100 NVL"},
		{query: Device{Name: "NVIDIA GB200"}, want: "NVIDIA GB200"},
		{query: Device{Name: "NVIDIA B200"}, want: "NVIDIA B200"},
		{query: Device{Name: "AMD Instinct MI250X/MI250"}, want: "AMD Instinct MI250X"},
		// normalised
		{query: Device{Name: "h200"}, want: "NVIDIA H200"},
		{query: Device{Name: "  nvidia h100 pcie "}, want: "NVIDIA H100 PCIe"},
		{query: Device{Name: "NVIDIA H100 NVL 94GB"}, want: "NVIDIA H100 NVL"}, // KernelAgent key
		{query: Device{Name: "A100-SXM4-80GB"}, want: "NVIDIA A100 SXM4 80GB"},
		{query: Device{Name: "gb200"}, want: "NVIDIA GB200"},
		{query: Device{Name: "b200"}, want: "NVIDIA B200"},
		{query: Device{Name: "AMD Instinct MI300X VF"}, want: "AMD Instinct MI300X"},
		{query: Device{Name: "Intel Arc B580"}, want: "Intel Arc B580"},
		// Strix Halo's name variants and its gfx target
		{query: Device{Name: "AMD Radeon 8060S"}, want: "AMD Radeon 8060S (Strix Halo)"},
		{query: Device{Name: "AMD Radeon 8060S Graphics"}, want: "AMD Radeon 8060S (Strix Halo)"},
		{query: Device{Name: "AMD Radeon Graphics (gfx1151)"}, want: "AMD Radeon 8060S (Strix Halo)"},
		{query: Device{Name: "AMD Radeon Graphics", Target: "gfx1151"}, want: "AMD Radeon 8060S (Strix Halo)"},
		{query: Device{Name: "gfx1151"}, want: "AMD Radeon 8060S (Strix Halo)"},
		{query: Device{Name: "AMD Radeon Graphics", Target: "gfx90a:sramecc+:xnack-"}, want: "AMD Instinct MI250X"},
		// a shared target resolved by the unit count
		{query: Device{Name: "AMD Instinct", Target: "gfx942", Units: 228}, want: "AMD Instinct MI300A"},
		// errors
		{query: Device{Name: "AMD Radeon Graphics"}, errHas: []string{"generic AMD name"}},
		{query: Device{Name: "gfx942"}, errHas: []string{"ambiguous", "MI300X", "MI300A", "MI325X"}},
		{query: Device{Name: "NVIDIA H100"}, errHas: []string{"unknown gpu", "NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H100 SXM"}},
		{query: Device{Name: "NVIDIA GB300"}, errHas: []string{"unknown gpu", "NVIDIA GB200"}},
		{query: Device{Name: "AMD Radeon PRO W7900", Target: "gfx1100"}, errHas: []string{"unknown gpu"}},
		{query: Device{Name: "NVIDIA A100-SXM4-40GB MIG 3g.20gb"}, errHas: []string{"MIG slice", "NVIDIA A100 SXM4 40GB"}},
		{query: Device{Name: "Quantum Abacus 9000"}, errHas: []string{"unknown gpu", "kagent specs"}},
		{query: Device{Name: ""}, errHas: []string{"unknown gpu"}},
	}
	for _, tt := range tests {
		t.Run(tt.query.Name+"/"+tt.query.Target, func(t *testing.T) {
			got, err := Default().LookupDevice(tt.query)
			if tt.want != "" {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if got.Name != tt.want {
					t.Fatalf("got %q, want %q", got.Name, tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %q, want an error", got.Name)
			}
			if !errors.Is(err, ErrUnknownGPU) {
				t.Errorf("error %v is not ErrUnknownGPU", err)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
}

func TestLookupReturnsCopy(t *testing.T) {
	a, _ := Lookup("NVIDIA H200")
	a.DeviceNames[0] = "mutated"
	b, _ := Lookup("NVIDIA H200")
	if b.DeviceNames[0] != "NVIDIA H200" {
		t.Fatal("Lookup leaked the database's slice")
	}
}

func TestNormalize(t *testing.T) {
	tests := map[string]string{
		"NVIDIA A100-SXM4-80GB":             "a100 sxm4 80gb",
		"Intel(R) Arc(TM) B580 Graphics":    "arc b580",
		"NVIDIA GeForce RTX 4090":           "rtx 4090",
		"AMD Instinct MI250X/MI250":         "instinct mi250x mi250",
		"Intel(R) Data Center GPU Max 1550": "data center gpu max 1550",
	}
	for in, want := range tests {
		if got := normalize(in); got != want {
			t.Errorf("normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoadOverrides(t *testing.T) {
	path := writeFile(t, "my.yaml", `gpus:
  - name: H200            # an alias: overrides the H200 entry
    mem_bw_gbs: 4219
    notes: measured copy bandwidth
  - name: Lab GPU X
    vendor: nvidia
    device_names: ["NVIDIA Lab X"]
    units: 10
    fp32_tflops: 1
    mem_bw_gbs: 100
`)
	db, err := LoadOverrides(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := db.Lookup("NVIDIA H200")
	if err != nil {
		t.Fatal(err)
	}
	if h.Name != "NVIDIA H200" || h.MemBWGBs != 4219 || h.BF16TFLOPS != 989.4 || h.Notes != "measured copy bandwidth" {
		t.Errorf("merged H200 = %+v", h)
	}
	if x, err := db.Lookup("NVIDIA Lab X"); err != nil || x.FP32TFLOPS != 1 {
		t.Errorf("added entry: %+v, %v", x, err)
	}
	if db.Len() != Default().Len()+1 {
		t.Errorf("len %d, want %d", db.Len(), Default().Len()+1)
	}
	// The default database is untouched.
	if d, _ := Lookup("NVIDIA H200"); d.MemBWGBs != 4800 {
		t.Errorf("default database mutated: %v", d.MemBWGBs)
	}
}

func TestLoadOverridesErrors(t *testing.T) {
	tests := []struct {
		name, body string
		errHas     []string
	}{
		{"unknown key", "gpus:\n  - name: NVIDIA H200\n    mem_bw_gb: 4219\n", []string{"bad.yaml:3:", `unknown key "mem_bw_gb"`, `did you mean "mem_bw_gbs"`}},
		{"unknown top key", "gpu:\n  - name: x\n", []string{"bad.yaml:1:", `unknown key "gpu"`}},
		{"bad type", "gpus:\n  - name: NVIDIA H200\n    units: many\n", []string{"bad.yaml:2:", "many"}},
		{"incomplete new entry", "gpus:\n  - name: Mystery\n    vendor: amd\n", []string{"bad.yaml:2:", "mem_bw_gbs must be > 0", "fp32_tflops must be > 0"}},
		{"no name", "gpus:\n  - vendor: amd\n", []string{"bad.yaml:2:", "without a name"}},
		{"conflicting device name", "gpus:\n  - name: Fake\n    vendor: nvidia\n    device_names: [NVIDIA H100 PCIe]\n    fp32_tflops: 1\n    mem_bw_gbs: 1\n", []string{"bad.yaml:2:", "NVIDIA H100 PCIe"}},
		{"bad unsourced key", "gpus:\n  - name: NVIDIA H200\n    unsourced: [bandwidth]\n", []string{"bad.yaml:2:", `unknown key "bandwidth"`}},
		{"not yaml", "gpus: [\n", []string{"bad.yaml"}},
		{"negative", "gpus:\n  - name: NVIDIA L4\n    l2_mb: -1\n", []string{"l2_mb is negative"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := LoadOverrides(writeFile(t, "bad.yaml", tt.body))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, ErrInvalidSpecs) {
				t.Errorf("%v is not ErrInvalidSpecs", err)
			}
			for _, s := range tt.errHas {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q lacks %q", err, s)
				}
			}
		})
	}
	if _, err := LoadOverrides(filepath.Join(t.TempDir(), "missing.yaml")); err == nil || !strings.HasPrefix(err.Error(), "load gpu specs overrides:") {
		t.Errorf("missing file: %v", err)
	}
}

func TestEmptyOverrides(t *testing.T) {
	db, err := LoadOverrides(writeFile(t, "empty.yaml", "# nothing\n"))
	if err != nil || db.Len() != Default().Len() {
		t.Fatalf("%v, %d", err, db.Len())
	}
}
