package llm

import (
	"errors"
	"strings"
	"testing"
)

const kernel = `import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n && True
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)

def kernel_function(x):
    return x
`

func TestExtractPython(t *testing.T) {
	tests := []struct {
		name  string
		reply string
		want  string
	}{
		{"tagged block", "Here:\n```python\n" + kernel + "```\nDone.", kernel},
		{"untagged block", "```\n" + kernel + "```", kernel},
		{"py tag and CRLF", "```py\r\n" + strings.ReplaceAll(kernel, "\n", "\r\n") + "```\r\n", kernel},
		{"prefers the kernel over a later usage snippet",
			"```python\n" + kernel + "```\nUse it:\n```python\nout = kernel_function(x)\nprint(out)\n```", kernel},
		{"prefers the later of two kernels",
			"Draft:\n```python\n" + strings.Replace(kernel, "BLOCK", "B", 1) + "```\nFinal:\n```python\n" + kernel + "```", kernel},
		{"skips other languages", "```bash\npip install triton\n```\n```python\n" + kernel + "```\n```json\n{}\n```", kernel},
		{"unterminated fence (reply cut off)", "Sure.\n```python\n" + kernel, kernel},
		{"closed block beats a cut-off one of the same rank",
			"```python\n" + kernel + "```\n```python\n" + kernel + "# half", kernel},
		{"tilde fence and indented fence", "  ~~~python\n" + kernel + "  ~~~\n", kernel},
		{"longer fence containing a triple backtick line",
			"````python\n" + kernel + "# ```\n````", kernel + "# ```\n"},
		{"no fence, whole reply is code", kernel, kernel},
		{"ModelNew entry", "```python\nimport torch\nclass ModelNew(torch.nn.Module):\n    pass\n```", "import torch\nclass ModelNew(torch.nn.Module):\n    pass\n"},
		{"last complete python block when none defines a kernel",
			"```python\nx = 1\n```\ntext\n```python\ny = 2\n```", "y = 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ExtractPython(tt.reply)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestExtractPythonNone(t *testing.T) {
	for _, reply := range []string{
		"", "I cannot help with that.", "```bash\nls\n```", "```\nsome prose in a block\n```",
	} {
		_, err := ExtractPython(reply)
		if !errors.Is(err, ErrNoCode) {
			t.Errorf("%q: err = %v, want ErrNoCode", reply, err)
		}
	}
	_, err := ExtractPython("```bash\nls\n```\n```text\nhi\n```")
	if err == nil || !strings.Contains(err.Error(), "bash, text") {
		t.Errorf("error should list the block languages: %v", err)
	}
}

type diag struct {
	Bottlenecks []struct {
		Category string `json:"category"`
		Summary  string `json:"summary"`
	} `json:"bottlenecks"`
}

func TestExtractJSON(t *testing.T) {
	obj := `{"bottlenecks": [{"category": "memory", "summary": "uncoalesced {loads} \"quoted\""}]}`
	tests := []struct {
		name  string
		reply string
	}{
		{"bare", obj},
		{"fenced json", "Analysis:\n```json\n" + obj + "\n```\nThanks"},
		{"untagged fence", "```\n" + obj + "\n```"},
		{"prose around", "The answer is " + obj + " and that is all {not json}."},
		{"prose with braces first", "Use {BLOCK} sizes. " + obj},
		{"trailing commas", `{"bottlenecks": [{"category": "memory", "summary": "uncoalesced {loads} \"quoted\"",},],}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d diag
			if err := ExtractJSON(tt.reply, &d); err != nil {
				t.Fatal(err)
			}
			if len(d.Bottlenecks) != 1 || d.Bottlenecks[0].Category != "memory" || d.Bottlenecks[0].Summary != `uncoalesced {loads} "quoted"` {
				t.Errorf("got %+v", d)
			}
		})
	}
	var list []map[string]any
	if err := ExtractJSON("Here: [{\"a\": 1}, {\"a\": 2}] done", &list); err != nil || len(list) != 2 {
		t.Errorf("array: %v %v", list, err)
	}
}

func TestExtractJSONErrors(t *testing.T) {
	var d diag
	for _, reply := range []string{"", "no json here", "{\"unterminated\": ", "{not: json}"} {
		if err := ExtractJSON(reply, &d); !errors.Is(err, ErrNoJSON) {
			t.Errorf("%q: err = %v, want ErrNoJSON", reply, err)
		}
	}
	err := ExtractJSON(`{"bottlenecks": "memory"}`, &d)
	if err == nil || !strings.Contains(err.Error(), "bottlenecks") || !strings.Contains(err.Error(), "does not fit") {
		t.Errorf("type mismatch error unclear: %v", err)
	}
}
