package sweep

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// goldenManifest is the manifest of the test problems (level 1, all).
func goldenManifest(t testing.TB) Manifest {
	t.Helper()
	_, ps, err := FindProblems(testSource, 1)
	if err != nil {
		t.Fatal(err)
	}
	return Manifest{Format: FormatManifest, Source: "testdata/kernelbench", Level: 1, Selection: "all", Strategy: "greedy", Problems: ps}
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("%s differs from the golden file (go test -update rewrites it):\n%s", name, got)
	}
}

func TestMarkdownGolden(t *testing.T) {
	m := goldenManifest(t)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	var rs []ProblemResult
	for id := 1; id <= 5; id++ { // problem 6 has no result
		r := fixedResult(id)
		r.ID, r.Name, r.File, r.Level = id, m.Problems[id-1].Name, m.Problems[id-1].File, 1
		r.fillSpeedups()
		rs = append(rs, r)
	}
	rs[1].Status, rs[1].Error = StatusError, "worker exited: signal: killed"
	rs[1].Correct, rs[1].Kernel = false, nil
	rs[1].fillSpeedups()
	// A compile baseline timed with CV 14% is shown with its CV and counted,
	// and so is a host-bound one.
	rs[3].Compile = &Timing{MedianMS: 0.8, MeanMS: 0.85, StdMS: 0.119, N: 100, HostBound: true}
	rs[4].Eager = &Timing{MedianMS: 1, MeanMS: 1, N: 100, HostBound: true}
	golden(t, "report.golden.md", Markdown(m, rs, now))
}

// TestMarkdownNothingCorrect: no correct problem and no baselines: fast_p
// is n/a where nothing was timed and 0 elsewhere; nothing divides by zero.
func TestMarkdownNothingCorrect(t *testing.T) {
	m := goldenManifest(t)
	var rs []ProblemResult
	for _, p := range m.Problems {
		rs = append(rs, ProblemResult{ID: p.ID, Name: p.Name, File: p.File, Level: 1, Status: StatusFailed,
			Error: "generate: all 4 seeds failed", Origin: OriginGenerated})
	}
	rs[0].Eager = &Timing{MedianMS: 1, MeanMS: 1, N: 10}
	rs[0].CompileUnavailable = "torch.compile is not available"
	md := string(Markdown(m, rs, time.Time{}))
	for _, want := range []string{"| 0 | 0.000 (0/6) | n/a |", "6 selected, 0 correct, 6 failed",
		"n/a (no correct problem) vs PyTorch eager, n/a (torch.compile is not available) vs torch.compile"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "NaN") || strings.Contains(md, "Inf") {
		t.Errorf("report holds NaN or Inf:\n%s", md)
	}
	if _, err := Plot(m, rs); err != nil {
		t.Errorf("plot: %v", err)
	}
	if _, err := Plot(m, nil); err != nil {
		t.Errorf("plot of nothing: %v", err)
	}
}

func writeTestFile(t testing.TB, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("# "+name+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestPlotFontsAndTitle: fast_p.svg names its font with fallbacks ending in
// sans-serif, and a title too long for the drawing is clipped with "…"
// instead of running off its left and right edges.
func TestPlotFontsAndTitle(t *testing.T) {
	m := goldenManifest(t)
	var ids []string
	for id := 1; id < 400; id += 2 {
		ids = append(ids, itoa(id))
	}
	m.Selection = strings.Join(ids, ",")
	svg, err := Plot(m, nil)
	if err != nil {
		t.Fatal(err)
	}
	families := regexp.MustCompile(`font-family:([^;]*);`).FindAllStringSubmatch(string(svg), -1)
	if len(families) == 0 {
		t.Fatal("no font-family in fast_p.svg")
	}
	for _, f := range families {
		if f[1] != "'Liberation Sans', Arimo, Arial, Helvetica, sans-serif" {
			t.Errorf("font-family %q, want Liberation Sans with fallbacks ending in sans-serif", f[1])
		}
	}
	title := regexp.MustCompile(`<text x="([-0-9.]+)"[^>]*>(fast_p: [^<]*)</text>`).FindStringSubmatch(string(svg))
	if title == nil {
		t.Fatalf("no title in fast_p.svg:\n%s", svg)
	}
	if x, _ := strconv.ParseFloat(title[1], 64); x < 0 || !strings.HasSuffix(title[2], "…") {
		t.Errorf("title %q at x %s: want it clipped with … and starting inside the drawing", title[2], title[1])
	}
}
