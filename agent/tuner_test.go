package agent

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/search"
	"github.com/kagent-kernels/kagent/search/tune"
)

// TestKnobTuner runs package tune on the rmsnorm example (the knob finder
// needs only Python's standard library).
func TestKnobTuner(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	src, err := os.ReadFile(filepath.Join("..", "examples", "rmsnorm", "input.py"))
	if err != nil {
		t.Fatal(err)
	}
	kt := search.KnobTuner{Finder: tune.Finder{Python: py, CacheDir: t.TempDir()}}
	vs, err := kt.Variants(context.Background(), string(src), 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) == 0 || len(vs) > 4 {
		t.Fatalf("%d variants, want 1 to 4", len(vs))
	}
	seen := map[string]bool{store.SourceHash(string(src)): true}
	for _, v := range vs {
		h := store.SourceHash(v.Source)
		if v.Label == "" || seen[h] {
			t.Errorf("variant %q repeats a source or has no label", v.Label)
		}
		seen[h] = true
	}
	again, err := kt.Variants(context.Background(), string(src), 4)
	if err != nil || len(again) != len(vs) || again[0].Source != vs[0].Source {
		t.Errorf("variants are not deterministic")
	}
	none, err := kt.Variants(context.Background(), "import torch\n\ndef kernel_function(x):\n    return x * 2\n", 4)
	if err != nil || len(none) != 0 {
		t.Errorf("a kernel without knobs: %d variants, %v", len(none), err)
	}
}
