package report

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/roofline"
)

// Series names of the plots (also their legend entries, as prefixes).
const (
	SeriesBest        = "best so far"
	SeriesCandidates  = "candidates"
	SeriesEager       = "PyTorch eager"
	SeriesCompile     = "torch.compile"
	SeriesFloor       = "roofline floor"
	SeriesInput       = "input kernel"
	SeriesBestPoint   = "best kernel"
	SeriesMemRoof     = "memory roof"
	SeriesComputeRoof = "compute roof"
)

var (
	colorBest    = color.NRGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorCand    = color.NRGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xb0}
	colorEager   = color.NRGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colorCompile = color.NRGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colorFloor   = color.NRGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colorInput   = color.NRGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colorRoof    = color.NRGBA{A: 0xff}
)

// TimePlot renders the best time per round (a line) with every correct
// candidate's time (points) and horizontal lines at PyTorch eager,
// torch.compile and the roofline floor, as SVG.
func TimePlot(d Data) ([]byte, error) {
	p, err := timePlot(d)
	if err != nil {
		return nil, err
	}
	return RenderSVG(p)
}

func timePlot(d Data) (*plot.Plot, error) {
	der, err := d.derive()
	if err != nil {
		return nil, err
	}
	p := NewPlot()
	p.Title.Text = "Best time per round: " + d.Name
	p.X.Label.Text = "round"
	p.Y.Label.Text = "time per call (ms)"
	p.Legend.Top = true
	p.Add(plotter.NewGrid())

	last := 0
	var best plotter.XYs
	lo, hi := math.Inf(1), 0.0
	see := func(v float64) {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, r := range der.rounds {
		last = r.Round
		if r.BestMS > 0 {
			best = append(best, plotter.XY{X: float64(r.Round), Y: r.BestMS})
			see(r.BestMS)
		}
	}
	var cands plotter.XYs
	for _, c := range d.Candidates {
		if c.Correct() {
			cands = append(cands, plotter.XY{X: float64(c.Round), Y: c.Time.MedianMS})
			see(c.Time.MedianMS)
		}
	}
	xmin, xmax := -0.5, float64(last)+0.5
	for _, h := range []struct {
		name string
		ms   float64
		col  color.Color
		dash []vg.Length
	}{
		{SeriesEager, d.Baselines.Eager.MedianMS, colorEager, []vg.Length{vg.Points(6), vg.Points(3)}},
		{SeriesCompile, d.Baselines.Compile.MedianMS, colorCompile, []vg.Length{vg.Points(2), vg.Points(2)}},
		{SeriesFloor, d.Work.FloorMS, colorFloor, []vg.Length{vg.Points(8), vg.Points(2), vg.Points(2), vg.Points(2)}},
	} {
		if h.ms <= 0 {
			continue
		}
		see(h.ms)
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: h.ms}, {X: xmax, Y: h.ms}})
		if err != nil {
			return nil, fmt.Errorf("time plot: %w", err)
		}
		l.Color, l.Dashes, l.Width = h.col, h.dash, vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(LegendText(p, fmt.Sprintf("%s %s ms", h.name, fmtMS(h.ms))), l)
	}
	if len(cands) > 0 {
		s, err := plotter.NewScatter(cands)
		if err != nil {
			return nil, fmt.Errorf("time plot: %w", err)
		}
		s.GlyphStyle = draw.GlyphStyle{Color: colorCand, Radius: vg.Points(3.5), Shape: draw.RingGlyph{}}
		p.Add(s)
		p.Legend.Add(SeriesCandidates, s)
	}
	if len(best) > 0 {
		l, pts, err := plotter.NewLinePoints(best)
		if err != nil {
			return nil, fmt.Errorf("time plot: %w", err)
		}
		l.Color, l.Width = colorBest, vg.Points(2)
		l.StepStyle = plotter.PostStep
		pts.GlyphStyle = draw.GlyphStyle{Color: colorBest, Radius: vg.Points(3), Shape: draw.CircleGlyph{}}
		p.Add(l, pts)
		p.Legend.Add(SeriesBest, l, pts)
	}
	p.X.Min, p.X.Max = xmin, xmax
	p.X.Tick.Marker = roundTicks{}
	if hi == 0 {
		lo, hi = 0.1, 1 // nothing measured: an empty chart
	}
	if hi/lo > 20 {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = lo/1.5, hi*4
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.45 // room for the legend above the lines
	}
	return p, nil
}

// RooflinePlot renders every timed candidate on the GPU's roofline as SVG:
// x is arithmetic intensity (FLOP/byte), y achieved GFLOP/s, under the
// memory roof (intensity × bandwidth) and the compute roof.
func RooflinePlot(d Data) ([]byte, error) {
	p, err := rooflinePlot(d)
	if err != nil {
		return nil, err
	}
	return RenderSVG(p)
}

// NoRoofline labels the roofline plot of a platform without peak figures
// (the cpu platform), which has no roofs to draw candidates under.
const NoRoofline = "no roofline: " + roofline.UnplacedNoPeaks

func rooflinePlot(d Data) (*plot.Plot, error) {
	der, err := d.derive()
	if err != nil {
		return nil, err
	}
	if !d.GPU.hasPeaks() {
		return messagePlot(strings.TrimSuffix("Candidates on the roofline: "+d.GPU.Name, ": "), NoRoofline)
	}
	p := NewPlot()
	p.Title.Text = "Candidates on the roofline: " + d.GPU.Name
	p.X.Label.Text = "arithmetic intensity (FLOP/byte)"
	p.Y.Label.Text = "achieved GFLOP/s"
	// The legend sits bottom right, below the compute roof at high
	// intensity, where a kernel seldom lands; top left it covers the
	// memory roof.
	p.Legend.Top = false
	p.Legend.Left = false
	p.Add(plotter.NewGrid())

	var input, cands, best []point
	xlo, xhi, ylo, yhi := math.Inf(1), 0.0, math.Inf(1), 0.0
	for i, c := range d.Candidates {
		if !c.Correct() {
			continue
		}
		pl := d.place(c)
		if pl.Intensity <= 0 || pl.GFLOPs <= 0 {
			continue
		}
		pt := point{plotter.XY{X: pl.Intensity, Y: pl.GFLOPs}, c.ID}
		xlo, xhi = math.Min(xlo, pl.Intensity), math.Max(xhi, pl.Intensity)
		ylo, yhi = math.Min(ylo, pl.GFLOPs), math.Max(yhi, pl.GFLOPs)
		switch {
		case i == der.best:
			best = append(best, pt)
		case c.Round == 0:
			input = append(input, pt)
		default:
			cands = append(cands, pt)
		}
	}
	bw, peak := d.GPU.MemBWGBs, d.GPU.PeakTFLOPS*1000 // GB/s, GFLOP/s
	ridge := ratio.Of(peak, bw)
	if ridge > 0 {
		xlo, xhi = math.Min(xlo, ridge/8), math.Max(xhi, ridge*8)
	}
	if xhi == 0 {
		xlo, xhi = 0.01, 100 // nothing to place and no roofs
	}
	xlo, xhi = xlo/2, xhi*2
	if bw > 0 {
		ylo = math.Min(ylo, xlo*bw)
		yhi = math.Max(yhi, math.Min(xhi*bw, orInf(peak)))
	}
	if peak > 0 {
		yhi = math.Max(yhi, peak)
	}
	if yhi == 0 {
		ylo, yhi = 1, 1e6
	}
	ylo, yhi = ylo/2, yhi*2

	if bw > 0 {
		end := xhi
		if ridge > 0 {
			end = ridge
		}
		l, err := plotter.NewLine(plotter.XYs{{X: xlo, Y: xlo * bw}, {X: end, Y: end * bw}})
		if err != nil {
			return nil, fmt.Errorf("roofline plot: %w", err)
		}
		l.Color, l.Width = colorRoof, vg.Points(2)
		p.Add(l)
		p.Legend.Add(LegendText(p, fmt.Sprintf("%s %.0f GB/s", SeriesMemRoof, bw)), l)
	}
	if peak > 0 {
		start := xlo
		if ridge > 0 {
			start = ridge
		}
		l, err := plotter.NewLine(plotter.XYs{{X: start, Y: peak}, {X: xhi, Y: peak}})
		if err != nil {
			return nil, fmt.Errorf("roofline plot: %w", err)
		}
		l.Color, l.Width = colorRoof, vg.Points(2)
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(LegendText(p, fmt.Sprintf("%s %.4g TFLOP/s %s", SeriesComputeRoof, d.GPU.PeakTFLOPS, d.DType)), l)
	}
	labelled := labelledPoints(xlo, xhi, ylo, yhi, best, input, cands)
	for _, s := range []struct {
		name  string
		pts   []point
		style draw.GlyphStyle
	}{
		{SeriesInput, input, draw.GlyphStyle{Color: colorInput, Radius: vg.Points(4), Shape: draw.BoxGlyph{}}},
		{SeriesCandidates, cands, draw.GlyphStyle{Color: colorCand, Radius: vg.Points(3), Shape: draw.RingGlyph{}}},
		{SeriesBestPoint, best, draw.GlyphStyle{Color: colorBest, Radius: vg.Points(4.5), Shape: draw.CircleGlyph{}}},
	} {
		if len(s.pts) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.pts))
		var lxys plotter.XYs
		var ids []string
		for i, pt := range s.pts {
			xys[i] = pt.xy
			if labelled[pt.id] {
				lxys, ids = append(lxys, pt.xy), append(ids, pt.id)
			}
		}
		sc, err := plotter.NewScatter(xys)
		if err != nil {
			return nil, fmt.Errorf("roofline plot: %w", err)
		}
		sc.GlyphStyle = s.style
		p.Add(sc)
		p.Legend.Add(s.name, sc)
		if len(ids) > 0 {
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: lxys, Labels: ids})
			if err != nil {
				return nil, fmt.Errorf("roofline plot: %w", err)
			}
			for i := range lb.TextStyle {
				lb.TextStyle[i].Font = font.Font{Typeface: plotTypeface, Variant: plotVariant, Size: vg.Points(7)}
			}
			lb.Offset = vg.Point{X: vg.Points(5), Y: vg.Points(2)}
			p.Add(lb)
		}
	}
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = plot.LogTicks{Prec: -1}, plot.LogTicks{Prec: -1}
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = xlo, xhi, ylo, yhi
	return p, nil
}

// point is a candidate placed on the roofline.
type point struct {
	xy plotter.XY
	id string
}

// labelledPoints picks the points whose ids the roofline plot writes next
// to them: the best first, then the input, then the other candidates, each
// only where its label would not cover one already written (labels of
// nearby points ran into one another). Nothing is labelled on a plot of
// more than 40 points. Positions compare on the plot's log scales, as
// fractions of its width and height.
func labelledPoints(xlo, xhi, ylo, yhi float64, series ...[]point) map[string]bool {
	const maxLabelled, labelW, labelH = 40, 0.08, 0.035
	n := 0
	for _, s := range series {
		n += len(s)
	}
	out := map[string]bool{}
	if n > maxLabelled {
		return out
	}
	frac := func(v, lo, hi float64) float64 { return math.Log(v/lo) / math.Log(hi/lo) }
	var placed [][2]float64
	for _, s := range series {
	next:
		for _, pt := range s {
			x, y := frac(pt.xy.X, xlo, xhi), frac(pt.xy.Y, ylo, yhi)
			for _, q := range placed {
				if math.Abs(x-q[0]) < labelW && math.Abs(y-q[1]) < labelH {
					continue next
				}
			}
			placed = append(placed, [2]float64{x, y})
			out[pt.id] = true
		}
	}
	return out
}

// messagePlot is a plot with a title and one line of text in place of
// axes and data.
func messagePlot(title, msg string) (*plot.Plot, error) {
	p := NewPlot()
	p.Title.Text = title
	p.HideAxes()
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: 0.5}}, Labels: []string{msg}})
	if err != nil {
		return nil, fmt.Errorf("plot %q: %w", title, err)
	}
	lb.TextStyle[0].Font = font.Font{Typeface: plotTypeface, Variant: plotVariant, Size: vg.Points(14)}
	lb.TextStyle[0].XAlign, lb.TextStyle[0].YAlign = draw.XCenter, draw.YCenter
	p.Add(lb)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	return p, nil
}

func orInf(v float64) float64 {
	if v <= 0 {
		return math.Inf(1)
	}
	return v
}

// roundTicks marks whole rounds, at most about ten of them.
type roundTicks struct{}

// Ticks implements plot.Ticker.
func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	first, last := int(math.Ceil(lo)), int(math.Floor(hi))
	step := max(1, (last-first+10)/10)
	var ticks []plot.Tick
	for r := first; r <= last; r += step {
		ticks = append(ticks, plot.Tick{Value: float64(r), Label: strconv.Itoa(r)})
	}
	return ticks
}

// Interface guards
var _ plot.Ticker = roundTicks{}
