package report

import (
	"bytes"
	"encoding/xml"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
)

// svgText is one <text> of an SVG.
type svgText struct {
	text, family string
	x, size      float64
	rotated      bool // inside a rotated group
}

var (
	styleFamily = regexp.MustCompile(`font-family:([^;]*)`)
	styleSize   = regexp.MustCompile(`font-size:([0-9.]+)px`)
)

// svgTextElements lists the <text> elements of an SVG document.
func svgTextElements(t *testing.T, b []byte) []svgText {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(b))
	var out []svgText
	var groups []bool // rotated, per open <g>
	var cur *svgText
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			attr := map[string]string{}
			for _, a := range tok.Attr {
				attr[a.Name.Local] = a.Value
			}
			switch tok.Name.Local {
			case "g":
				groups = append(groups, strings.Contains(attr["transform"], "rotate"))
			case "text":
				var st svgText
				for _, r := range groups {
					st.rotated = st.rotated || r
				}
				if m := styleFamily.FindStringSubmatch(attr["style"]); m != nil {
					st.family = m[1]
				}
				if m := styleSize.FindStringSubmatch(attr["style"]); m != nil {
					st.size, _ = strconv.ParseFloat(m[1], 64)
				}
				st.x, _ = strconv.ParseFloat(attr["x"], 64)
				cur = &st
			}
		case xml.EndElement:
			switch tok.Name.Local {
			case "g":
				groups = groups[:len(groups)-1]
			case "text":
				out = append(out, *cur)
				cur = nil
			}
		case xml.CharData:
			if cur != nil {
				cur.text += string(tok)
			}
		}
	}
}

// checkSVGText checks every text of a report's SVG: its font-family is a
// list ending in a generic family, and a horizontal text lies inside the
// drawing's width, measured with the font it was laid out with.
func checkSVGText(t *testing.T, name string, b []byte) []svgText {
	t.Helper()
	texts := svgTextElements(t, b)
	if len(texts) == 0 {
		t.Fatalf("%s: no text", name)
	}
	for _, st := range texts {
		if !strings.HasPrefix(st.family, "'Liberation Sans', ") ||
			!(strings.HasSuffix(st.family, ", sans-serif") || strings.HasSuffix(st.family, ", monospace")) {
			t.Errorf("%s: text %q has font-family %q, want 'Liberation Sans' first and a generic family last", name, st.text, st.family)
		}
		if st.rotated {
			continue
		}
		style := text.Style{Font: font.Font{Typeface: plotTypeface, Variant: plotVariant, Size: vg.Points(st.size)},
			Handler: plot.DefaultTextHandler}
		if w := style.Width(st.text).Points(); st.x < 0 || st.x+w > plotWidth.Points() {
			t.Errorf("%s: text %q spans x %.1f to %.1f, outside 0 to %.0f", name, st.text, st.x, st.x+w, plotWidth.Points())
		}
	}
	return texts
}

// TestSVGFontsAndFit: every plot names its font with fallbacks ending in a
// generic family, and a title or legend too long for the drawing is
// clipped with "…" instead of running off it.
func TestSVGFontsAndFit(t *testing.T) {
	long := h200Greedy()
	long.Name = strings.Repeat("fused_gemm_bias_gelu_softmax_", 6)
	long.GPU.Name = "NVIDIA H200 NVL with an unusually long marketing name, 141 GB HBM3e, 4.8 TB/s"
	long.DType = strings.Repeat("bf16-with-a-long-suffix-", 4)
	for _, tc := range []struct {
		name string
		d    Data
	}{{"h200", h200Greedy()}, {"cpu", cpuTune()}, {"nothing correct", nothingCorrect()}, {"long names", long}} {
		for _, plot := range []struct {
			name   string
			render func(Data) ([]byte, error)
		}{{"time", TimePlot}, {"roofline", RooflinePlot}} {
			b, err := plot.render(tc.d)
			if err != nil {
				t.Fatal(err)
			}
			texts := checkSVGText(t, tc.name+" "+plot.name, b)
			if tc.name != "long names" {
				continue
			}
			clipped := 0
			for _, st := range texts {
				if strings.HasSuffix(st.text, "…") {
					clipped++
				}
			}
			if want := map[string]int{"time": 1, "roofline": 2}[plot.name]; clipped != want {
				t.Errorf("%s plot: %d texts clipped, want %d (the title%s)", plot.name, clipped, want,
					map[string]string{"roofline": " and the compute roof's legend"}[plot.name])
			}
		}
	}
}

func TestFontFamily(t *testing.T) {
	for in, want := range map[string]string{
		"Liberation Sans": "'Liberation Sans', Arimo, Arial, Helvetica, sans-serif",
		"Liberation Mono": "'Liberation Mono', Cousine, 'Courier New', Courier, monospace",
		"Some 'Font'":     "'Some Font', sans-serif",
	} {
		if got := FontFamily(in); got != want {
			t.Errorf("FontFamily(%q) = %q, want %q", in, got, want)
		}
	}
}
