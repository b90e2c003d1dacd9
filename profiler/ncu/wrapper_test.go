package ncu

import (
	"strings"
	"testing"
)

func TestWrapperRender(t *testing.T) {
	w := Wrapper{
		HarnessDir:    "/cache/harness-abc",
		ProblemPath:   `/kernels/a<b>&&c/problem.py`,
		CandidatePath: `/runs/it's "quoted"\cand.py`,
		ShapeOverride: map[string]any{"batch_size": 4, "dim1": 96},
		Seeds:         []int64{42, 43, 987654321},
		DType:         "bf16",
		TF32:          "allow",
		Entry:         "kernel_function",
		Warmup:        3,
	}
	got, err := w.Render()
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "wrapper.py.golden", []byte(got))
	for _, want := range []string{
		// not HTML-escaped, neither by pongo2 nor by encoding/json
		`REQUEST = json.loads("{\"problem_path\":\"/kernels/a<b>&&c/problem.py\",\"dtype\":\"bf16\",` +
			`\"seeds\":[42,43,987654321],\"tf32\":\"allow\",\"shapes\":[],\"size\":{\"batch_size\":4,\"dim1\":96}}")`,
		`CANDIDATE_PATH = "/runs/it's \"quoted\"\\cand.py"`,
		`ENTRY = "kernel_function"`, `WARMUP_CALLS = 3`,
		`torch.cuda.profiler.start()`, `torch.cuda.nvtx.range_push(RANGE_NAME)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("wrapper lacks %s", want)
		}
	}
	if strings.Contains(got, "&lt;") || strings.Contains(got, "&amp;") {
		t.Error("wrapper was HTML-escaped")
	}
}

func TestWrapperRenderDefaults(t *testing.T) {
	got, err := Wrapper{HarnessDir: "/h", ProblemPath: "/p.py", CandidatePath: "/c.py"}.Render()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`REQUEST = json.loads("{\"problem_path\":\"/p.py\",\"dtype\":\"\",\"seeds\":[1,2,3],\"tf32\":\"forbid\",\"shapes\":[]}")`,
		`DEVICE = "cuda"`, `ENTRY = ""`, `WARMUP_CALLS = 1`,
	}
	for _, want := range want {
		if !strings.Contains(got, want) {
			t.Errorf("wrapper lacks %s", want)
		}
	}
}

func TestWrapperRenderErrors(t *testing.T) {
	if _, err := (Wrapper{ProblemPath: "/p", CandidatePath: "/c"}).Render(); err == nil {
		t.Error("no harness dir accepted")
	}
	if _, err := (Wrapper{HarnessDir: "/h", ProblemPath: "/p\xff", CandidatePath: "/c"}).Render(); err == nil {
		t.Error("invalid UTF-8 accepted")
	}
}
