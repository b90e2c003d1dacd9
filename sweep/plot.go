package sweep

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/internal/ratio"
)

// Series names of the fast_p plot (legend entries, as prefixes).
const (
	SeriesEager   = "vs PyTorch eager"
	SeriesCompile = "vs torch.compile"
)

var (
	colorEager   = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorCompile = color.NRGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colorOne     = color.NRGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
)

const (
	// curvePoints is how many thresholds the fast_p curves are sampled at.
	curvePoints = 400
)

// Plot renders fast_p as a function of the threshold p, against PyTorch
// eager and torch.compile, as SVG: a step curve per baseline, with the
// reported thresholds (Ps) marked, and a line at p = 1 (as fast as the
// baseline). Like the report it depends only on the manifest and results.
func Plot(m Manifest, results []ProblemResult) ([]byte, error) {
	v := newView(m, results)
	p := report.NewPlot()
	p.Title.Text = "fast_p: " + v.title()
	p.X.Label.Text = "speedup threshold p"
	p.Y.Label.Text = "fraction of problems correct and faster than p"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	eager, compile := v.outcomes(false), v.outcomes(true)
	hi := 2.5
	for _, outs := range [][]Outcome{eager, compile} {
		for _, o := range outs {
			if o.Correct && o.Speedup > 0 && !math.IsInf(o.Speedup, 0) {
				hi = math.Max(hi, o.Speedup*1.1)
			}
		}
	}
	hi = math.Min(hi, 20) // a few outliers must not flatten the curve

	one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: 0}, {X: 1, Y: 1}})
	if err != nil {
		return nil, fmt.Errorf("fast_p plot: %w", err)
	}
	one.Color, one.Width, one.Dashes = colorOne, vg.Points(1), []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(one)

	for _, s := range []struct {
		name string
		outs []Outcome
		have bool
		col  color.Color
	}{
		{SeriesEager, eager, v.haveEager, colorEager},
		{SeriesCompile, compile, v.haveCompile, colorCompile},
	} {
		if !s.have {
			continue
		}
		curve := make(plotter.XYs, curvePoints+1)
		for i := range curve {
			x := hi * float64(i) / curvePoints
			curve[i] = plotter.XY{X: x, Y: FastP(s.outs, x)}
		}
		l, err := plotter.NewLine(curve)
		if err != nil {
			return nil, fmt.Errorf("fast_p plot: %w", err)
		}
		l.Color, l.Width = s.col, vg.Points(2)
		l.StepStyle = plotter.PostStep
		marks := make(plotter.XYs, len(Ps))
		for i, x := range Ps {
			marks[i] = plotter.XY{X: x, Y: FastP(s.outs, x)}
		}
		sc, err := plotter.NewScatter(marks)
		if err != nil {
			return nil, fmt.Errorf("fast_p plot: %w", err)
		}
		sc.GlyphStyle = draw.GlyphStyle{Color: s.col, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}
		p.Add(l, sc)
		g, n := GeoMean(s.outs)
		label := s.name
		if n > 0 {
			label = fmt.Sprintf("%s (geomean %sx over %d)", s.name, ratio.String(g), n)
		}
		p.Legend.Add(report.LegendText(p, label), l, sc)
	}
	p.X.Min, p.X.Max = 0, hi
	p.Y.Min, p.Y.Max = 0, 1.3 // room for the legend above the curves
	return report.RenderSVG(p)
}
