package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The size of every plot of a kagent report (7 × 4.5 in).
const (
	plotWidth  = 7 * vg.Inch
	plotHeight = 4.5 * vg.Inch
)

// The plots' text is set in Liberation Sans, whose metrics gonum/plot
// measures with. The SVG names the typeface and then fonts of the same
// metrics (Arimo, Arial, Helvetica), so text keeps the width it was laid
// out with, and ends with the generic family, so that a viewer without any
// of them still draws it.
const (
	plotTypeface = "Liberation"
	plotVariant  = "Sans"
)

// fontFamilies maps the family names gonum/plot writes to the lists the
// SVG carries; any other family gets the generic sans-serif appended.
var fontFamilies = map[string]string{
	"Liberation Sans": `'Liberation Sans', Arimo, Arial, Helvetica, sans-serif`,
	"Liberation Mono": `'Liberation Mono', Cousine, 'Courier New', Courier, monospace`,
}

// FontFamily is the CSS font-family list an SVG of a report gives for a
// font family gonum/plot names: a fallback list ending in a generic family.
func FontFamily(family string) string {
	if l, ok := fontFamilies[family]; ok {
		return l
	}
	return fmt.Sprintf("'%s', sans-serif", strings.ReplaceAll(family, "'", ""))
}

// fitShare is the part of the room a line of text may take: the rest is
// for a fallback font wider than the metrics it was measured with.
const fitShare = 0.9

// NewPlot is plot.New with every text in the report's typeface.
func NewPlot() *plot.Plot {
	p := plot.New()
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		f.Typeface, f.Variant = plotTypeface, plotVariant
	}
	return p
}

// LegendText clips a legend entry of p to half the plot's width.
func LegendText(p *plot.Plot, s string) string {
	return fit(p.Legend.TextStyle, s, plotWidth/2)
}

// fit clips s, ending it with "…", so that in style it takes at most
// fitShare of width.
func fit(style text.Style, s string, width vg.Length) string {
	limit := width * fitShare
	if style.Handler == nil || style.Width(s) <= limit {
		return s
	}
	r := []rune(s)
	for len(r) > 0 && style.Width(string(r)+"…") > limit {
		r = r[:len(r)-1]
	}
	return strings.TrimRight(string(r), " ") + "…"
}

var fontFamilyDecl = regexp.MustCompile(`font-family:([^;"]*)`)

// RenderSVG draws a plot as the SVG every kagent report uses (7 × 4.5 in):
// the title and axis labels clipped to fit the drawing, every font-family
// a fallback list (FontFamily). gonum/plot panics on some degenerate
// inputs; RenderSVG returns an error.
func RenderSVG(p *plot.Plot) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("render plot %q: %v", p.Title.Text, r)
		}
	}()
	p.Title.Text = fit(p.Title.TextStyle, p.Title.Text, plotWidth)
	p.X.Label.Text = fit(p.X.Label.TextStyle, p.X.Label.Text, plotWidth)
	p.Y.Label.Text = fit(p.Y.Label.TextStyle, p.Y.Label.Text, plotHeight)
	c := vgsvg.New(plotWidth, plotHeight)
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("render plot %q: %w", p.Title.Text, err)
	}
	return fontFamilyDecl.ReplaceAllFunc(buf.Bytes(), func(decl []byte) []byte {
		family := strings.TrimSpace(strings.TrimPrefix(string(decl), "font-family:"))
		return []byte("font-family:" + FontFamily(family))
	}), nil
}
