package report

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kagent-kernels/kagent/roofline"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// h200Greedy is a greedy run on the KernelBench RMSNorm problem (fp32,
// 112x64x512x512) with the anchors of docs/h200: eager 11.41 ms, compile
// 3.95 ms, the two-pass input 5.39 ms, floor 3.56 ms.
func h200Greedy() Data {
	start := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	bytes := 2 * 112.0 * 64 * 512 * 512 * 4
	flops := 3 * 112.0 * 64 * 512 * 512
	return Data{
		RunID: "20261130-090000-rmsnorm", Name: "rmsnorm", KernelDir: "examples/rmsnorm",
		Strategy: "greedy", Platform: "cuda", Device: "NVIDIA H200",
		GPU:   GPU{Name: "NVIDIA H200", Units: 132, MemBWGBs: 4800, PeakTFLOPS: 67, MemGB: 141, L2MB: 60},
		DType: "fp32", TF32: "forbid", Representative: true,
		StartedAt: start, FinishedAt: start.Add(14*time.Minute + 3*time.Second),
		Baselines: Baselines{
			Eager:   Stats{MedianMS: 11.41, P20MS: 11.38, P80MS: 11.45, CV: 0.004, N: 100},
			Compile: Stats{MedianMS: 3.95, P20MS: 3.94, P80MS: 3.97, CV: 0.003, N: 100},
			Input:   Stats{MedianMS: 5.39, P20MS: 5.38, P80MS: 5.41, CV: 0.002, N: 100},
		},
		Work: Work{Bytes: bytes, FLOPs: flops, FloorMS: 3.56},
		Candidates: []Candidate{
			{ID: "input", Round: 0, Status: "profiled", Time: Stats{MedianMS: 5.39, P20MS: 5.38, P80MS: 5.41, CV: 0.002, N: 100},
				Bytes: 1.5 * bytes, RooflineClass: "memory", SOL: 71.2},
			{ID: "r1c1", Round: 1, Parent: "input", Bottleneck: 1, Direction: "read x once: keep the column tile in registers",
				Status: "rejected", Failure: "correctness", Reason: "max abs error 0.41 > atol 1e-05 at [3, 17, 0, 5] | shape 112x64x512x512",
				LLM: Usage{Calls: 2, PromptTokens: 9100, CompletionTokens: 2400, CostUSD: 0.061}},
			{ID: "r1c2", Round: 1, Parent: "input", Bottleneck: 1, Direction: "read x once: keep the column tile in registers",
				Status: "profiled", Time: Stats{MedianMS: 3.91, P20MS: 3.9, P80MS: 3.93, CV: 0.003, N: 100},
				RooflineClass: "memory", SOL: 90.1, LLM: Usage{Calls: 3, PromptTokens: 14000, CompletionTokens: 3100, EstimatedCalls: 3, CostUSD: 0.087}},
			{ID: "r2c1", Round: 2, Parent: "r1c2", Bottleneck: 1, Direction: "wider vector loads",
				Status: "profiled", Time: Stats{MedianMS: 4.2, P20MS: 4.18, P80MS: 4.25, CV: 0.005, N: 100},
				RooflineClass: "memory", SOL: 84, LLM: Usage{Calls: 2, PromptTokens: 9800, CompletionTokens: 2000, CostUSD: 0.059}},
			{ID: "r2c2", Round: 2, Parent: "r1c2", Bottleneck: 2, Direction: "more programs in flight",
				Status: "rejected", Failure: "extra_shapes", Reason: "shape {batch_size: 2, features: 48, dim1: 33, dim2: 31}: out of bounds",
				LLM: Usage{Calls: 2, PromptTokens: 9900, CompletionTokens: 2200, CostUSD: 0.06}},
			{ID: "r3c1", Round: 3, Parent: "r1c2", Bottleneck: 1, Direction: "persistent programs", Label: "",
				Status: "profiled", Time: Stats{MedianMS: 3.71, P20MS: 3.7, P80MS: 3.73, CV: 0.002, N: 100},
				RooflineClass: "memory", SOL: 95.4, LLM: Usage{Calls: 2, PromptTokens: 10100, CompletionTokens: 2600, CostUSD: 0.064}},
			{ID: "r4c1", Round: 4, Parent: "r3c1", Direction: "tune", Label: "BLOCK=2048 num_warps=8",
				Status: "failed", Reason: "timing: worker exited (signal 9)"},
		},
		BestID:     "r3c1",
		StopReason: "plateau: 1 round without improvement",
		LLM:        Usage{Calls: 11, PromptTokens: 52900, CompletionTokens: 12300, EstimatedCalls: 3, CostUSD: 0.331},
	}
}

// cpuTune is a tune run on the cpu platform: not representative, no
// torch.compile, no GPU roofs, no LLM.
func cpuTune() Data {
	return Data{
		RunID: "cpu-tune", Name: "softmax", KernelDir: "examples/softmax", Strategy: "tune",
		Platform: "cpu", Device: "cpu", DType: "fp32", TF32: "allow",
		Baselines: Baselines{
			Eager:   Stats{MedianMS: 0.8, P20MS: 0.79, P80MS: 0.82, CV: 0.02, N: 20},
			Compile: Stats{Unavailable: "torch.compile is not available"},
			Input:   Stats{MedianMS: 2.5, P20MS: 2.4, P80MS: 2.6, CV: 0.03, N: 20},
		},
		Work: Work{Bytes: 8e6, FLOPs: 5e6},
		Candidates: []Candidate{
			{ID: "input", Status: "timed", Time: Stats{MedianMS: 2.5, N: 20}},
			{ID: "t1", Round: 1, Parent: "input", Label: "BLOCK=2048", Status: "profiled", Time: Stats{MedianMS: 2.1, CV: math.NaN(), N: 20},
				RooflineClass: "unknown"}, // no peaks to place it against
			{ID: "t2", Round: 1, Parent: "input", Label: "num_warps=8", Status: "timed", Time: Stats{MedianMS: 2.7, P80MS: math.Inf(1), N: 20}},
			{ID: "t3", Round: 2, Parent: "t1", Label: "BLOCK=2048 num_warps=8", Status: "rejected",
				Failure: "triton_launch", Reason: "out of resource: shared memory | required 270336 > 232448"},
		},
		StopReason: "search space exhausted",
		Notes:      []string{"tune: 3 of 12 variants tried"},
	}
}

// nothingCorrect is a run whose input kernel failed verification.
func nothingCorrect() Data {
	return Data{
		RunID: "bad", KernelDir: "examples/broken", Strategy: "greedy", Platform: "cuda",
		Device: "NVIDIA H200", Representative: true,
		GPU: GPU{Name: "NVIDIA H200", MemBWGBs: 4800, PeakTFLOPS: 67},
		Candidates: []Candidate{
			{ID: "input", Status: "rejected", Failure: "import", Reason: "SyntaxError: invalid syntax (input.py, line 3)"},
		},
		StopReason: "input kernel rejected",
	}
}

var fixtures = []struct {
	name string
	data func() Data
}{
	{"h200_greedy", h200Greedy},
	{"cpu_tune", cpuTune},
	{"nothing_correct", nothingCorrect},
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs from the golden file (-want +got; go test -update rewrites it):\n%s", name, diff)
	}
}

func TestMarkdownGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			got, err := Markdown(f.data())
			if err != nil {
				t.Fatal(err)
			}
			golden(t, f.name+".md", got)
		})
	}
}

func TestJSONGolden(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			got, err := JSON(f.data())
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("invalid JSON:\n%s", got)
			}
			for _, bad := range []string{"NaN", "Infinity"} {
				if bytes.Contains(got, []byte(bad)) {
					t.Errorf("JSON holds %s", bad)
				}
			}
			golden(t, f.name+".json", got)
		})
	}
}

func TestJSONFields(t *testing.T) {
	b, err := JSON(h200Greedy())
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Schema string `json:"schema"`
		Best   struct {
			ID             string  `json:"id"`
			SpeedupEager   float64 `json:"speedup_vs_eager"`
			SpeedupCompile float64 `json:"speedup_vs_compile"`
			FloorFraction  float64 `json:"floor_fraction"`
		} `json:"best"`
		Rounds []struct {
			BestID   string `json:"best_id"`
			Improved bool   `json:"improved"`
		} `json:"rounds"`
		Candidates []struct {
			ID     string   `json:"id"`
			Median *float64 `json:"speedup_vs_input"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Schema != Schema || r.Best.ID != "r3c1" {
		t.Errorf("schema %q best %q", r.Schema, r.Best.ID)
	}
	approx := func(name string, got, want float64) {
		if math.Abs(got-want) > 1e-3 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	approx("speedup vs eager", r.Best.SpeedupEager, 11.41/3.71)
	approx("speedup vs compile", r.Best.SpeedupCompile, 3.95/3.71)
	approx("floor fraction", r.Best.FloorFraction, 3.56/3.71)
	var rounds []string
	for _, x := range r.Rounds {
		rounds = append(rounds, x.BestID)
	}
	if diff := cmp.Diff([]string{"input", "r1c2", "r1c2", "r3c1", "r3c1"}, rounds); diff != "" {
		t.Errorf("best per round (-want +got):\n%s", diff)
	}
	if r.Candidates[1].Median != nil {
		t.Errorf("rejected candidate has a speedup: %v", *r.Candidates[1].Median)
	}
}

func TestDataErrors(t *testing.T) {
	d := h200Greedy()
	d.BestID = "nope"
	if _, err := Markdown(d); !errors.Is(err, ErrUnknownCandidate) {
		t.Errorf("unknown best: got %v", err)
	}
	d = h200Greedy()
	d.Candidates = append(d.Candidates, d.Candidates[0])
	if _, err := JSON(d); !errors.Is(err, ErrDuplicateCandidate) {
		t.Errorf("duplicate id: got %v", err)
	}
	if err := Write(t.TempDir(), d); !errors.Is(err, ErrDuplicateCandidate) {
		t.Errorf("write: got %v", err)
	}
}

// svgTexts parses an SVG document and returns its text content.
func svgTexts(t *testing.T, b []byte) string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var texts []string
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return strings.Join(texts, "\n")
}

func TestPlots(t *testing.T) {
	tests := []struct {
		name    string
		data    Data
		time    []string // texts the time plot must show
		roof    []string
		notRoof []string
	}{
		{
			name: "h200 greedy",
			data: h200Greedy(),
			time: []string{SeriesBest, SeriesCandidates, SeriesEager + " 11.41 ms", SeriesCompile + " 3.950 ms", SeriesFloor + " 3.560 ms", "round"},
			roof: []string{SeriesMemRoof + " 4800 GB/s", SeriesComputeRoof + " 67 TFLOP/s fp32", SeriesInput, SeriesCandidates,
				SeriesBestPoint, "r3c1", "input", "arithmetic intensity (FLOP/byte)"},
			// r2c1 sits next to the best, r3c1: its point is drawn, its label is not.
			notRoof: []string{"r1c1", "r4c1", "r2c1"},
		},
		{
			// No peaks: the roofline plot says so instead of placing the
			// candidates under roofs it does not have.
			name:    "cpu tune, no roofs, no compile",
			data:    cpuTune(),
			time:    []string{SeriesBest, SeriesEager},
			roof:    []string{NoRoofline},
			notRoof: []string{SeriesMemRoof, SeriesComputeRoof, SeriesBestPoint, "t1", SeriesInput, "arithmetic intensity"},
		},
		{
			name:    "nothing correct",
			data:    nothingCorrect(),
			roof:    []string{SeriesMemRoof, SeriesComputeRoof},
			notRoof: []string{SeriesBestPoint, SeriesCandidates},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tb, err := TimePlot(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			text := svgTexts(t, tb)
			for _, want := range tt.time {
				if !strings.Contains(text, want) {
					t.Errorf("time plot lacks %q; texts:\n%s", want, text)
				}
			}
			if strings.Contains(text, SeriesCompile) && tt.data.Baselines.Compile.MedianMS == 0 {
				t.Errorf("time plot shows %s without a time", SeriesCompile)
			}
			rb, err := RooflinePlot(tt.data)
			if err != nil {
				t.Fatal(err)
			}
			text = svgTexts(t, rb)
			for _, want := range tt.roof {
				if !strings.Contains(text, want) {
					t.Errorf("roofline plot lacks %q; texts:\n%s", want, text)
				}
			}
			for _, bad := range tt.notRoof {
				if strings.Contains(text, bad) {
					t.Errorf("roofline plot shows %q", bad)
				}
			}
		})
	}
}

func TestWrite(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	if err := Write(dir, h200Greedy()); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	want := []string{FileJSON, FileMarkdown, FileRooflinePlot, FileTimePlot}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	md, err := os.ReadFile(filepath.Join(dir, FileMarkdown))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{FileTimePlot, FileRooflinePlot} {
		if !bytes.Contains(md, []byte("("+f+")")) {
			t.Errorf("report.md does not link %s", f)
		}
	}
}

func TestGPUFromSpecs(t *testing.T) {
	s, err := roofline.Lookup("NVIDIA H200")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		dtype string
		peak  float64
	}{
		{"fp32", s.FP32TFLOPS},
		{"tf32", s.TF32TFLOPS},
		{"bf16", s.BF16TFLOPS},
		{"int3", 0},
	}
	for _, tt := range tests {
		g := GPUFromSpecs(s, tt.dtype)
		if g.PeakTFLOPS != tt.peak || g.MemBWGBs != s.MemBWGBs || g.Units != s.Units || g.Name != s.Name {
			t.Errorf("%s: got %+v, want peak %v", tt.dtype, g, tt.peak)
		}
	}
}

// TestHostBoundBaseline: a host-bound baseline is named under the baselines
// table and marked in report.json; the others are not.
func TestHostBoundBaseline(t *testing.T) {
	d := h200Greedy()
	d.Baselines.Eager.HostMS = 0.012
	d.Baselines.Compile = Stats{MedianMS: 0.14, P20MS: 0.12, P80MS: 0.16, CV: 0.14, N: 500, HostMS: 0.13, HostBound: true}
	md, err := Markdown(d)
	if err != nil {
		t.Fatal(err)
	}
	text := string(md)
	if n := strings.Count(text, "Host-bound:"); n != 1 || !strings.Contains(text, "Host-bound: torch.compile took 0.130 ms of host time per call against its 0.140 ms median") {
		t.Fatalf("want one host-bound line, for torch.compile:\n%s", text)
	}
	js, err := JSON(d)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Baselines map[string]struct {
			HostMS    *float64 `json:"host_ms"`
			HostBound bool     `json:"host_bound"`
		} `json:"baselines"`
	}
	if err := json.Unmarshal(js, &r); err != nil {
		t.Fatal(err)
	}
	if c, e := r.Baselines["compile"], r.Baselines["eager"]; !c.HostBound || c.HostMS == nil || *c.HostMS != 0.13 || e.HostBound || e.HostMS == nil || *e.HostMS != 0.012 {
		t.Errorf("report.json baselines: %+v", r.Baselines)
	}
}

// TestMarkdownEscapesControlText: a reason, direction or note carrying
// terminal escapes (from a candidate or an LLM reply) is written inert.
func TestMarkdownEscapesControlText(t *testing.T) {
	d := nothingCorrect()
	d.Candidates[0].Reason = "mismatch\x1b[2K\rPASSED\u202e"
	d.Candidates[0].Direction = "\x1b]0;title\x07fuse"
	d.Notes = []string{"note\x1b[1A"}
	md, err := Markdown(d)
	if err != nil {
		t.Fatal(err)
	}
	if i := strings.IndexFunc(string(md), func(r rune) bool { return r == 0x1b || r == '\r' || r == 0x07 || r == 0x202e }); i >= 0 {
		t.Fatalf("report.md holds a control character at %d:\n%q", i, md)
	}
	if !strings.Contains(string(md), `mismatch\x1b[2K\rPASSED\u202e`) {
		t.Errorf("the reason is not shown escaped:\n%s", md)
	}
}

func TestEstimatedTag(t *testing.T) {
	for _, tt := range []struct {
		estimated, calls int
		want             string
	}{
		{0, 0, ""},
		{0, 5, ""},
		{5, 5, " (estimated)"},
		{3, 11, " (estimated for 3 of 11 calls)"},
	} {
		if got := EstimatedTag(tt.estimated, tt.calls); got != tt.want {
			t.Errorf("EstimatedTag(%d, %d) = %q, want %q", tt.estimated, tt.calls, got, tt.want)
		}
	}
}

// TestModelsTable: the spend per model is a table of report.md when more
// than one model served the run (names escaped), and by_model of
// report.json always.
func TestModelsTable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		models []ModelUsage
		table  bool
	}{
		{"one model", []ModelUsage{{Model: "gpt-5", Usage: Usage{Calls: 3, CostUSD: 0.5}}}, false},
		{"two models", []ModelUsage{{Model: "gpt-5", Usage: Usage{Calls: 2, CostUSD: 0.4}},
			{Model: "mini|\x1b[2Kx", Usage: Usage{Calls: 1, CostUSD: 0.1}}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := nothingCorrect()
			d.Models = tc.models
			md, err := Markdown(d)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(string(md), "## LLM models"); got != tc.table {
				t.Errorf("models table shown: %v, want %v", got, tc.table)
			}
			if tc.table && !strings.Contains(string(md), "| `mini\\|\\x1b[2Kx` | 1 |") {
				t.Errorf("the model name is not escaped:\n%s", md)
			}
			b, err := JSON(d)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				LLM struct {
					ByModel []struct {
						Model string `json:"model"`
						Calls int    `json:"calls"`
					} `json:"by_model"`
				} `json:"llm"`
			}
			if err := json.Unmarshal(b, &r); err != nil || len(r.LLM.ByModel) != len(tc.models) || r.LLM.ByModel[0].Calls != tc.models[0].Calls {
				t.Errorf("report.json by_model = %+v, %v", r.LLM.ByModel, err)
			}
		})
	}
}
