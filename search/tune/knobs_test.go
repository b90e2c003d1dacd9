package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// finder returns a Finder with a private cache dir, running $KAGENT_PYTHON
// (default python3) and skipping the test when there is none.
func finder(t *testing.T) Finder {
	t.Helper()
	name := os.Getenv("KAGENT_PYTHON")
	if name == "" {
		name = "python3"
	}
	py, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed", name)
	}
	return Finder{Python: py, CacheDir: t.TempDir()}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// summary is one knob in a line: "ID kind=K value=V site=S [min=M] [linked=N] [kernel=K]".
func summary(k Knob) string {
	s := fmt.Sprintf("%s %s=%d %s", k.ID, k.Kind, k.Value, k.Site)
	if k.Kernel != "" {
		s += " in " + k.Kernel
	}
	if k.Min != 0 {
		s += fmt.Sprintf(" min=%d", k.Min)
	}
	if len(k.Linked) > 0 {
		s += fmt.Sprintf(" linked=%d", len(k.Linked))
	}
	return s
}

func TestKnobs(t *testing.T) {
	f := finder(t)
	tests := []struct {
		name string
		file string // under testdata/, or a path from the repo root when it starts with "examples/"
		src  string // used when file is ""
		want []string
	}{
		{
			name: "rmsnorm example: function-level assignment and a launch keyword",
			file: "examples/rmsnorm/input.py",
			want: []string{
				"BLOCK block=1024 assign in _rmsnorm_two_pass",
				"num_warps warps=4 launch in _rmsnorm_two_pass",
				"num_stages stages=3 implicit in _rmsnorm_two_pass",
			},
		},
		{
			name: "softmax example: literal launch keywords",
			file: "examples/softmax/input.py",
			want: []string{
				"BLOCK block=256 launch in _softmax_three_pass",
				"num_warps warps=4 launch in _softmax_three_pass",
				"num_stages stages=2 launch in _softmax_three_pass",
			},
		},
		{
			name: "layernorm example: module constants feeding two kernels of a ModelNew",
			file: "examples/layernorm/input.py",
			want: []string{
				"STATS_BLOCK block=256 assign in _row_stats",
				"NORM_BLOCK block=1024 assign in _normalize",
				"num_warps@L76 warps=2 launch in _row_stats",
				"num_stages stages=3 implicit in _row_stats",
				"num_warps@L79 warps=4 launch in _normalize",
			},
		},
		{
			name: "matvec example: the grid's literal moves with BLOCK_M",
			file: "examples/matvec/input.py",
			want: []string{
				"BLOCK_M block=16 launch in _matvec linked=1",
				"BLOCK_K block=32 launch in _matvec",
				"num_warps warps=2 launch in _matvec",
				"num_stages stages=1 launch in _matvec",
			},
		},
		{
			name: "swiglu example: one module constant feeding two launches",
			file: "examples/swiglu/input.py",
			want: []string{
				"BLOCK block=512 assign in _silu_gate",
				"num_warps@L49 warps=4 launch in _silu_gate",
				"num_warps@L50 warps=4 launch in _mul_up",
			},
		},
		{
			name: "fused residual rmsnorm example: a self attribute and three kernels",
			file: "examples/fused_residual_rmsnorm/input.py",
			want: []string{
				"self.block block=1024 attribute in _add",
				"num_warps@L72 warps=4 launch in _add",
				"BLOCK block=256 launch in _row_rstd",
				"num_warps@L73 warps=4 launch in _row_rstd",
				"num_stages stages=3 implicit in _row_rstd",
				"num_warps@L74 warps=4 launch in _scale",
			},
		},
		{
			name: "comments, strings, docstrings and f-strings hold no knobs",
			file: "tricky_text.py",
			want: []string{
				"BLOCK block=256 assign in _copy",
				"num_warps warps=4 launch in _copy",
			},
		},
		{
			name: "several kernels: computed and whole-reduction blocks, tuple assignment, positional constexpr",
			file: "several.py",
			want: []string{
				"num_warps@L40 warps=8 launch in _row_sum",
				"BM block=32 assign in _scale",
				"BN block=128 assign in _scale",
				"num_warps@L42 warps=4 launch in _scale",
				"num_stages stages=2 launch in _scale",
				"BLOCK block=4096 launch in _exact min=4096",
				"num_warps@L43 warps=4 implicit in _exact",
			},
		},
		{
			name: "autotune configs; nothing at the autotuned launch",
			file: "autotune.py",
			want: []string{
				"_mv.configs[0].BLOCK_SIZE_M block=128 config in _mv",
				"_mv.configs[0].BLOCK_SIZE_N block=64 config in _mv",
				"_mv.configs[0].GROUP_SIZE_M group=8 config in _mv",
				"_mv.configs[0].num_warps warps=4 config in _mv",
				"_mv.configs[0].num_stages stages=3 config in _mv",
				"_mv.configs[1].BLOCK_SIZE_M block=64 config in _mv",
				"_mv.configs[1].BLOCK_SIZE_N block=64 config in _mv",
				"_mv.configs[1].GROUP_SIZE_M group=8 config in _mv",
				"_mv.configs[1].num_stages stages=4 config in _mv",
				"_mv.configs[1].num_warps warps=4 config in _mv",
				"_mv.configs[2].BLOCK_SIZE_N block=32 config in _mv",
				"_mv.configs[2].num_warps warps=2 config in _mv",
			},
		},
		{
			name: "module constants, parameter defaults, self attributes, grid literal",
			file: "scopes.py",
			want: []string{
				"BLOCK_SIZE@L5 block=1024 assign in _add",
				"NUM_WARPS warps=4 assign in _add",
				"warps warps=2 default in _add",
				"num_stages stages=1 launch in _add",
				"BLOCK_SIZE@L25 block=512 launch in _add linked=1",
				"self.BLOCK block=2048 attribute in _add",
				"self.num_warps warps=8 attribute in _add",
			},
		},
		{
			name: "launch of a kernel defined elsewhere",
			src:  "from lib import k\n\ndef f(x):\n    k[(4,)](x, BLOCK_SIZE_N=128, GROUP_M=8, num_warps=2, N=1024, flag=True)\n",
			want: []string{
				"BLOCK_SIZE_N block=128 launch",
				"GROUP_M group=8 launch",
				"num_warps warps=2 launch",
			},
		},
		{
			name: "CRLF line endings, a byte order mark and multi-byte characters before the literal",
			src:  "\ufeffB = 64  # größe\r\ndef f(x):\r\n    s = 'αβγ'; k[(1,)](x, BLOCK=B, num_warps=2)\r\n",
			want: []string{
				"B block=64 assign",
				"num_warps warps=2 launch",
			},
		},
		{
			name: "computed values are no knobs",
			src: "import triton\nBLOCK = triton.next_power_of_2(1000)\n\ndef f(x, n):\n" +
				"    W = 4 if n > 10 else 8\n    S = -1\n    k[(1,)](x, BLOCK=BLOCK, num_warps=W, num_stages=S, BLOCK_K=max(16, n))\n",
			want: nil,
		},
		{
			name: "a name assigned twice gives two knobs",
			src:  "def f(x, n):\n    NW = 4\n    if n > 4096:\n        NW = 8\n    k[(1,)](x, num_warps=NW)\n",
			want: []string{
				"NW@L2 warps=4 assign",
				"NW@L4 warps=8 assign",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.src
			switch {
			case strings.HasPrefix(tt.file, "examples/"):
				src = readFile(t, filepath.Join("..", "..", tt.file))
			case tt.file != "":
				src = readFile(t, filepath.Join("testdata", tt.file))
			}
			knobs, err := f.Knobs(context.Background(), src)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range knobs {
				got = append(got, summary(k))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("knobs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKnobsErrors(t *testing.T) {
	f := finder(t)
	_, err := f.Knobs(context.Background(), "def f(:\n    pass\n")
	if !errors.Is(err, ErrSyntax) || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("syntax error: got %v, want ErrSyntax at line 1", err)
	}
	_, err = Finder{Python: "/no/such/python", CacheDir: t.TempDir()}.Knobs(context.Background(), "x = 1\n")
	if !errors.Is(err, ErrNoPython) {
		t.Errorf("missing python: got %v, want ErrNoPython", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Knobs(ctx, "x = 1\n"); err == nil {
		t.Error("cancelled context: got no error")
	}
}
