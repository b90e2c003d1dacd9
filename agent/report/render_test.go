package report

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot/plotter"
)

// TestSVGRender draws every plot with a real SVG renderer (librsvg's
// rsvg-convert, as image viewers and browsers on Linux use): each must
// parse, render at its declared size and draw something. Skipped where
// rsvg-convert is missing, unless KAGENT_REQUIRE_TOOLS=1 (CI installs it).
func TestSVGRender(t *testing.T) {
	rsvg, err := exec.LookPath("rsvg-convert")
	if err != nil {
		if os.Getenv("KAGENT_REQUIRE_TOOLS") == "1" {
			t.Fatalf("KAGENT_REQUIRE_TOOLS=1 and no rsvg-convert (Debian: librsvg2-bin): %v", err)
		}
		t.Skip("no rsvg-convert (Debian: librsvg2-bin)")
	}
	// The plots (and their PNGs) are kept under $KAGENT_TEST_ARTIFACTS/plots
	// when it is set.
	dir := t.TempDir()
	if k := os.Getenv("KAGENT_TEST_ARTIFACTS"); k != "" {
		dir = filepath.Join(k, "plots")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		d    Data
	}{{"h200", h200Greedy()}, {"cpu", cpuTune()}, {"nothing-correct", nothingCorrect()}} {
		for _, p := range []struct {
			name   string
			render func(Data) ([]byte, error)
		}{{"time", TimePlot}, {"roofline", RooflinePlot}} {
			t.Run(tc.name+"-"+p.name, func(t *testing.T) {
				b, err := p.render(tc.d)
				if err != nil {
					t.Fatal(err)
				}
				svg := filepath.Join(dir, tc.name+"-"+p.name+".svg")
				if err := os.WriteFile(svg, b, 0o644); err != nil {
					t.Fatal(err)
				}
				out, err := exec.Command(rsvg, "--format", "png", svg).Output()
				if err != nil {
					t.Fatalf("rsvg-convert %s: %v", svg, err)
				}
				if err := os.WriteFile(strings.TrimSuffix(svg, ".svg")+".png", out, 0o644); err != nil {
					t.Fatal(err)
				}
				img, err := png.Decode(bytes.NewReader(out))
				if err != nil {
					t.Fatalf("rsvg-convert %s: not a PNG: %v", svg, err)
				}
				// plotWidth is in points; the renderer draws 96 pixels an inch, 72 points.
				if w := img.Bounds().Dx(); w != int(plotWidth.Points()*96/72+0.5) {
					t.Errorf("rendered %d pixels wide, want %.0f points at 96 dpi", w, plotWidth.Points())
				}
				if n := colours(img); n < 3 {
					t.Errorf("rendered image has %d colours: nothing drawn", n)
				}
			})
		}
	}
}

// colours counts the distinct colours of an image, up to 16.
func colours(img image.Image) int {
	seen := map[[4]uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, a := img.At(x, y).RGBA()
			seen[[4]uint32{r, g, bl, a}] = true
			if len(seen) >= 16 {
				return len(seen)
			}
		}
	}
	return len(seen)
}

func TestLabelledPoints(t *testing.T) {
	pt := func(id string, x, y float64) point { return point{plotter.XY{X: x, Y: y}, id} }
	best := []point{pt("best", 1, 1000)}
	input := []point{pt("input", 0.5, 500)}
	cands := []point{pt("near-best", 1.01, 1010), pt("far", 30, 200), pt("near-far", 30.2, 201), pt("alone", 0.05, 20)}
	got := labelledPoints(0.01, 100, 1, 1e6, best, input, cands)
	for id, want := range map[string]bool{"best": true, "input": true, "near-best": false, "far": true, "near-far": false, "alone": true} {
		if got[id] != want {
			t.Errorf("label of %s: %v, want %v (labelled: %v)", id, got[id], want, got)
		}
	}
	many := make([]point, 41)
	for i := range many {
		many[i] = pt(strconv.Itoa(i), float64(i+1), float64(i+1))
	}
	if got := labelledPoints(0.01, 100, 1, 1e6, many); len(got) != 0 {
		t.Errorf("41 points: %d labelled, want none", len(got))
	}
}
