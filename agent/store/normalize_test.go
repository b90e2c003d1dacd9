package store

import (
	"strings"
	"testing"
)

func TestNormalizeSource(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"comments", "x = 1  # set x\n# a whole line\ny = 2\n", "x=1\ny=2"},
		{"hash inside strings", `s = "a # b"  # c` + "\n" + `t = 'x#y'` + "\n" + `u = f"{x} #"`,
			`s="a # b"` + "\n" + `t="x#y"` + "\n" + `u=f"{x} #"`},
		{"hash inside a triple-quoted string", "code = '''\nline # kept\n'''\n", "code='''\nline # kept\n'''"},
		{"escaped quote before hash", `s = "a\" # b"  # c`, `s="a\" # b"`},
		{"raw string with escaped quote", `p = r'\'#'  # c`, `p=r'\'#'`},
		{"module, function and class docstrings",
			"\"\"\"Module doc.\n\nMore # text.\n\"\"\"\nimport triton\n\n\ndef f(x):\n    '''Doc.'''\n    return x\n\n\nclass A:\n    r\"\"\"Raw doc.\"\"\"\n    n = 1\n",
			"import triton\ndef f(x):\n    return x\nclass A:\n    n=1"},
		{"f-string statement kept", "def f():\n    f\"{g()}\"\n", "def f():\n    f\"{g()}\""},
		{"string in an expression kept", "x = \"doc\"\nprint('doc')\n", "x=\"doc\"\nprint(\"doc\")"},
		{"blank lines and trailing whitespace", "\n\nx = 1   \t\n   \n\ny = 2 \n\n", "x=1\ny=2"},
		{"CRLF", "def f(x):\r\n    # c\r\n    return x  \r\n", "def f(x):\n    return x"},
		{"CR", "a = 1\rb = 2\r", "a=1\nb=2"},
		{"indent width", "if a:\n  if b:\n    c()\n  d()\ne()", "if a:\n    if b:\n        c()\n    d()\ne()"},
		{"tabs", "if a:\n\tb()\n\tif c:\n\t\td()", "if a:\n    b()\n    if c:\n        d()"},
		{"brackets join lines", "y = f(a,\n      b,  # why\n      c)\n", "y=f(a,b,c)"},
		{"backslash continuation", "y = a + \\\n    b\n", "y=a+b"},
		{"operators and spacing", "x=a*-b**2//c;y=x[1 : 2]", "x=a*-b**2//c;y=x[1:2]"},
		{"names stay apart", "return  not  x", "return not x"},
		{"numbers", "eps = 1e-5 ; n = 0x1F", "eps=1e-5;n=0x1F"},
		{"decorators", "@triton.jit\ndef k(X, BLOCK: tl.constexpr):\n    pass", "@triton.jit\ndef k(X,BLOCK:tl.constexpr):\n    pass"},
		{"prefix case", `b = RB"x" + Rb'y'`, `b=rb"x"+rb"y"`},
		{"single quotes kept when needed", `s = 'say "hi"' + 'it\'s'`, `s='say "hi"'+'it\'s'`},
		{"unterminated string", "s = 'abc\nt = 1", "s='abc\nt=1"},
		{"unterminated triple string", "s = '''abc\n# not a comment", "s='''abc\n# not a comment"},
		{"non-ASCII names", "naïve = 1 → 2", "naïve=1→2"},
		{"byte-order mark", "\uFEFFx = 1", "x=1"},
		{"only comments", "# a\n\n# b\n", ""},
		{"empty", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := NormalizeSource(tc.in); got != tc.want {
				t.Errorf("NormalizeSource(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
			// Normalising is idempotent, up to the docstrings it already removed.
			if got := NormalizeSource(NormalizeSource(tc.in)); got != NormalizeSource(tc.in) {
				t.Errorf("not idempotent: %q", got)
			}
		})
	}
}

const kernelA = `import torch
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, y_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """One row per program."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask, other=0.0)
    ms = tl.sum(x * x, axis=0) / n_cols
    y = x * tl.rsqrt(ms + eps) * tl.load(w_ptr + cols, mask=mask)
    tl.store(y_ptr + row * n_cols + cols, y, mask=mask)


def kernel_function(x, w, eps=1e-6):
    y = torch.empty_like(x)
    rmsnorm_kernel[(x.shape[0],)](x, w, y, x.shape[1], eps, BLOCK=triton.next_power_of_2(x.shape[1]))
    return y
`

// kernelB is kernelA reformatted (black-like wrapping, other indentation,
// quotes, comments, CRLF).
const kernelB = "# Rewritten by the LLM: fused single pass.\r\n" +
	"import torch\r\nimport triton\r\nimport triton.language as tl\r\n" +
	"@triton.jit\r\n" +
	"def rmsnorm_kernel(\r\n        x_ptr, w_ptr, y_ptr,   # pointers\r\n        n_cols, eps,\r\n        BLOCK: tl.constexpr):\r\n" +
	"  '''One row per program: the docstring changed too.'''\r\n" +
	"  row = tl.program_id(0)   \r\n" +
	"  cols = tl.arange(0, BLOCK)\r\n" +
	"  mask = cols<n_cols\r\n" +
	"\r\n" +
	"  x = tl.load(x_ptr + row*n_cols + cols, mask=mask, other=0.0)  # load\r\n" +
	"  ms = tl.sum(x*x, axis=0)/n_cols\r\n" +
	"  y = x * tl.rsqrt(ms + eps) * \\\r\n      tl.load(w_ptr + cols, mask=mask)\r\n" +
	"  tl.store(y_ptr + row*n_cols + cols, y, mask=mask)\r\n" +
	"def kernel_function(x, w, eps = 1e-6):\r\n" +
	"  y = torch.empty_like(x)\r\n" +
	"  rmsnorm_kernel[(x.shape[0], )](\r\n    x, w, y, x.shape[1], eps,\r\n    BLOCK = triton.next_power_of_2(x.shape[1]),\r\n  )\r\n" +
	"  return y"

func TestSourceHash(t *testing.T) {
	if SourceHash(kernelA) != SourceHash(strings.ReplaceAll(kernelA, "    ", "  ")) {
		t.Error("indentation width changes the hash")
	}
	if SourceHash(kernelA) != SourceHash(kernelA+"\n# trailing comment\n\n") {
		t.Error("a trailing comment changes the hash")
	}
	// kernelB wraps the launch with a trailing comma: a different token
	// stream, so it must be written without one to match.
	b := strings.Replace(kernelB, "x.shape[0], )", "x.shape[0],)", 1)
	b = strings.Replace(b, "(x.shape[1]),\r\n  )", "(x.shape[1]))", 1)
	if NormalizeSource(kernelA) != NormalizeSource(b) {
		t.Errorf("reformatted kernel differs:\n%s\n---\n%s", NormalizeSource(kernelA), NormalizeSource(b))
	}
	for _, change := range []struct{ from, to string }{
		{"axis=0) / n_cols", "axis=0) / (n_cols - 1)"},
		{"other=0.0", "other=1.0"},
		{"    tl.store", "tl.store"}, // dedented out of the function
		{`"""One row per program."""`, `"""One row per program."""; row = 0`},
		{"eps=1e-6", "eps=1e-5"},
	} {
		if !strings.Contains(kernelA, change.from) {
			t.Fatalf("%q not in kernelA", change.from)
		}
		if SourceHash(kernelA) == SourceHash(strings.Replace(kernelA, change.from, change.to, 1)) {
			t.Errorf("changing %q to %q keeps the hash", change.from, change.to)
		}
	}
	if h := SourceHash(""); len(h) != 64 {
		t.Errorf("hash %q", h)
	}
}
