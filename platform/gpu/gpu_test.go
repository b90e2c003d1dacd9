package gpu

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kagent-kernels/kagent/kerneldir"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/platform/worker"
	"github.com/kagent-kernels/kagent/roofline"
)

// sh is a vendor tool that prints out.
func sh(out string) []string { return []string{"/bin/sh", "-c", "printf '" + out + "'"} }

func TestListerIDs(t *testing.T) {
	const a, b = "KAGENT_GPU_TEST_A", "KAGENT_GPU_TEST_B"
	tests := []struct {
		name string
		env  map[string]string
		tool []string
		want []string
	}{
		{"first variable", map[string]string{a: " 2, 3 ,", b: "7"}, nil, []string{"2", "3"}},
		{"a blank variable is unset", map[string]string{a: "  ", b: "7"}, nil, []string{"7"}},
		{"only commas", map[string]string{a: ","}, nil, nil},
		{"the tool", nil, sh(" 0\\n\\n 1 \\n"), []string{"0", "1"}},
		{"the tool lists none", nil, sh(""), []string{"0"}},
		{"the tool fails", nil, []string{"/bin/sh", "-c", "echo 5; exit 1"}, []string{"0"}},
		{"no tool", nil, []string{filepath.Join(t.TempDir(), "no-such-tool")}, []string{"0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(a, tt.env[a])
			t.Setenv(b, tt.env[b])
			l := Lister{Env: []string{a, b}, Tool: tt.tool, Parse: Lines}
			if d := cmp.Diff(tt.want, l.IDs(context.Background())); d != "" {
				t.Errorf("IDs (-want +got):\n%s", d)
			}
		})
	}
}

func TestDatabase(t *testing.T) {
	db, err := Database("")
	if err != nil || db.Len() != roofline.Default().Len() {
		t.Fatalf("Database(\"\") = %d entries, %v", db.Len(), err)
	}
	path := filepath.Join(t.TempDir(), "gpus.yaml")
	if err := os.WriteFile(path, []byte("gpus:\n  - name: H200\n    mem_bw_gbs: 4219\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err = Database(path)
	if err != nil {
		t.Fatal(err)
	}
	if h, err := db.Lookup("NVIDIA H200"); err != nil || h.MemBWGBs != 4219 {
		t.Errorf("overridden H200 = %+v, %v", h, err)
	}
	if _, err := Database(filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Error("a missing specs file gave no error")
	}
}

// testStack is a stack on a machine that has it, whose name tool prints
// names.
func testStack(t *testing.T, names string) *Stack {
	t.Helper()
	db, err := Database("")
	if err != nil {
		t.Fatal(err)
	}
	return &Stack{
		Name: "test", DB: db,
		Probe:   func() (bool, string) { return true, "/dev/test" },
		Missing: "no test driver found", Hint: "use another machine",
		Device: func(h worker.Hello) roofline.Device {
			return roofline.Device{Name: h.Device.Name, Units: h.Device.SMCount}
		},
		NameTool: sh(names),
		FirstGPU: func(out string) (roofline.Device, error) {
			l := Lines(out)
			if len(l) == 0 {
				return roofline.Device{}, errors.New("no GPU")
			}
			return roofline.Device{Name: l[0]}, nil
		},
	}
}

func TestStackUnavailable(t *testing.T) {
	s := testStack(t, "NVIDIA H200")
	s.Probe = func() (bool, string) { return false, "no /dev/test" }
	want := "test platform unavailable: no test driver found (no /dev/test); use another machine"
	var ue *platform.UnavailableError
	if err := s.Available(); !errors.As(err, &ue) || err.Error() != want {
		t.Errorf("Available = %v, want %q", err, want)
	}
	if _, err := s.Open(context.Background(), &kerneldir.Task{}); !errors.As(err, &ue) {
		t.Errorf("Open = %v, want *platform.UnavailableError", err)
	}
	if _, err := s.Specs(context.Background()); !errors.As(err, &ue) {
		t.Errorf("Specs = %v, want *platform.UnavailableError", err)
	}
	// A configured GPU needs no machine.
	s.Config.GPUName = "H200"
	if sp, err := s.Specs(context.Background()); err != nil || sp.Name != "NVIDIA H200" {
		t.Errorf("Specs with gpu_name = %+v, %v", sp, err)
	}
}

func TestStackOpenNilTask(t *testing.T) {
	if _, err := testStack(t, "").Open(context.Background(), nil); err == nil || err.Error() != "test: open: no kernel dir" {
		t.Errorf("Open(nil) = %v", err)
	}
}

func TestStackSpecs(t *testing.T) {
	ctx := context.Background()
	if sp, err := testStack(t, "NVIDIA H200\\nNVIDIA H100 PCIe\\n").Specs(ctx); err != nil || sp.Name != "NVIDIA H200" {
		t.Errorf("Specs = %+v, %v; want the first GPU", sp, err)
	}
	if _, err := testStack(t, "").Specs(ctx); err == nil || err.Error() != "no GPU" {
		t.Errorf("Specs of an empty list = %v, want FirstGPU's error", err)
	}
	s := testStack(t, "")
	s.NameTool = []string{"/bin/sh", "-c", "exit 2"}
	if _, err := s.Specs(ctx); err == nil || !strings.HasPrefix(err.Error(), "test: read the GPU name with /bin/sh: exit status 2") {
		t.Errorf("Specs with a failing tool = %v", err)
	}
}

func TestStackSpecsFor(t *testing.T) {
	s := testStack(t, "")
	h := worker.Hello{}
	h.Device.Name = "NVIDIA H200"
	if sp, err := s.specsFor(h); err != nil || sp.Name != "NVIDIA H200" {
		t.Errorf("specsFor = %+v, %v", sp, err)
	}
	s.Config.GPUName = "H100 PCIe"
	if sp, err := s.specsFor(h); err != nil || sp.Name != "NVIDIA H100 PCIe" {
		t.Errorf("specsFor with gpu_name = %+v, %v; want the configured GPU", sp, err)
	}
}
