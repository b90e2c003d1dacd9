package kernels

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNames(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"plain", `
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pass

def kernel_function(x, y):
    add_kernel[(1,)](x, y, 1, BLOCK=128)
`, []string{"add_kernel"}},
		{"autotune over several lines, jit with args, comments", `
@triton.autotune(
    configs=[
        triton.Config({"BLOCK": 1024}, num_warps=4),  # small
        triton.Config({"BLOCK": 2048}, num_warps=8),
    ],
    key=["n"],
)
@triton.jit(do_not_specialize=["n"])  # comment with @triton.jit text
def rmsnorm_fwd(x, y, n, BLOCK: tl.constexpr):
    pass

@triton.jit
def _helper(x):  # a device function, inlined
    return x

@staticmethod
def not_a_kernel():
    pass
`, []string{"rmsnorm_fwd", "_helper"}},
		{"bare jit import and wrapped function", `
from triton import jit

@jit
def k1(x):
    pass

def _impl(x):
    pass

k2 = triton.jit(_impl)

class ModelNew(torch.nn.Module):
    def forward(self, x):
        return x
`, []string{"k1", "_impl"}},
		{"no kernels", "def kernel_function(x):\n    return x\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if d := cmp.Diff(tt.want, Names(tt.src)); d != "" {
				t.Errorf("Names (-want +got):\n%s", d)
			}
		})
	}
}

func TestPattern(t *testing.T) {
	tests := []struct {
		names  []string
		suffix string
		want   string
		match  []string
		reject []string
	}{
		{[]string{"a", "b_c"}, "", `^(a|b_c)(_[0-9][0-9a-z]*)?$`,
			[]string{"a", "b_c", "a_0d1d2de"}, []string{"a.kd", "ab", "xa", "b", "b_c_helper"}},
		{[]string{"rmsnorm_apply"}, `(\.kd)?`, `^(rmsnorm_apply)(_[0-9][0-9a-z]*)?(\.kd)?$`,
			[]string{"rmsnorm_apply", "rmsnorm_apply.kd", "rmsnorm_apply_0d1d2de.kd"}, []string{"rmsnorm_apply_v2", "rmsnorm_applykd"}},
	}
	for _, tt := range tests {
		re := Pattern(tt.names, tt.suffix)
		if re.String() != tt.want {
			t.Errorf("Pattern(%q, %q) = %s, want %s", tt.names, tt.suffix, re, tt.want)
		}
		for _, k := range tt.match {
			if !re.MatchString(k) {
				t.Errorf("%s does not match %q", re, k)
			}
		}
		for _, k := range tt.reject {
			if re.MatchString(k) {
				t.Errorf("%s matches %q", re, k)
			}
		}
	}
	if got := Alternation([]string{"a_kernel", "b"}); got != "(a_kernel|b)" {
		t.Errorf("Alternation = %q", got)
	}
}

func TestIsDecorated(t *testing.T) {
	for _, k := range []string{
		"void at::native::vectorized_elementwise_kernel<4, FillFunctor<float>>(int, T2, T3)",
		"at::native::elementwise_kernel_manual_unroll",
		"reduce_kernel<512, 1>",
		"kernel(int)",
	} {
		if !IsDecorated(k) {
			t.Errorf("IsDecorated(%q) = false", k)
		}
	}
	for _, k := range []string{"rmsnorm_fwd", "_attn_fwd", "triton_poi_fused_add_0", "nvjet_sm90_tst", "voidkernel"} {
		if IsDecorated(k) {
			t.Errorf("IsDecorated(%q) = true", k)
		}
	}
}

func TestFileName(t *testing.T) {
	tests := map[string]string{
		"r2c1":       "r2c1",
		"a-b_C9":     "a-b_C9",
		"r1/c2 x.py": "r1_c2_x_py",
		"é":          "__", // one '_' a byte
		"":           "candidate",
	}
	for id, want := range tests {
		if got := FileName(id); got != want {
			t.Errorf("FileName(%q) = %q, want %q", id, got, want)
		}
	}
}
