package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/internal/termtext"
	"github.com/kagent-kernels/kagent/roofline"
)

// Markdown renders report.md: the summary first (best time, speedups over
// eager, torch.compile and the input kernel, the fraction of the roofline
// floor reached, why the run stopped), then the run's facts, the baselines,
// the round table, every candidate, and the rejected ones with reasons.
func Markdown(d Data) ([]byte, error) {
	der, err := d.derive()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	title := d.Name
	if title == "" {
		title = d.kernelDir()
	}
	fmt.Fprintf(&b, "# kagent report: %s\n\n", oneLine(title))
	writeSummary(&b, d, der)
	writeFacts(&b, d)
	writeModels(&b, d)
	writeBaselines(&b, d)
	writeRounds(&b, d, der)
	writeCandidates(&b, d, der)
	writeRejected(&b, d)
	writeScreening(&b, d)
	roof := "candidates on the roofline"
	if !d.GPU.hasPeaks() {
		roof = NoRoofline
	}
	fmt.Fprintf(&b, "## Plots\n\n![best time per round](%s)\n\n![%s](%s)\n", FileTimePlot, roof, FileRooflinePlot)
	return b.Bytes(), nil
}

func writeSummary(b *bytes.Buffer, d Data, der derived) {
	b.WriteString("## Summary\n\n")
	if !d.Representative {
		b.WriteString("> **Not representative:** these times were not taken on a GPU (platform " +
			code(d.Platform) + "); they check the pipeline, not kernel speed.\n\n")
	}
	if der.best < 0 {
		b.WriteString("- **No correct kernel**: not even the input kernel passed verification.\n")
	} else {
		best := d.Candidates[der.best]
		ms := best.Time.MedianMS
		e, c, in := d.speedups(ms)
		fmt.Fprintf(b, "- **Best: %s ms** (%s", fmtMS(ms), code(best.ID))
		if best.Label != "" {
			fmt.Fprintf(b, ", %s", code(best.Label))
		}
		b.WriteString(")\n")
		if best.Round == 0 {
			b.WriteString("- no candidate beat the input kernel\n")
		}
		for _, t := range []struct {
			name string
			s    Stats
			x    float64
		}{{"PyTorch eager", d.Baselines.Eager, e}, {"torch.compile", d.Baselines.Compile, c}, {"the input kernel", d.Baselines.Input, in}} {
			switch {
			case t.s.MedianMS > 0:
				fmt.Fprintf(b, "- vs %s (%s ms): **%s**\n", t.name, fmtMS(t.s.MedianMS), fmtSpeedup(t.x))
			case t.s.Unavailable != "":
				fmt.Fprintf(b, "- vs %s: n/a (%s)\n", t.name, oneLine(t.s.Unavailable))
			default:
				fmt.Fprintf(b, "- vs %s: n/a (not timed)\n", t.name)
			}
		}
		if f := d.floorFraction(ms); f > 0 {
			fmt.Fprintf(b, "- **%s of the roofline floor** (%s ms: no correct kernel can be faster)\n", fmtPct(100*f), fmtMS(d.Work.FloorMS))
		} else if !d.GPU.hasPeaks() {
			b.WriteString("- roofline floor: n/a (" + roofline.UnplacedNoPeaks + ")\n")
		} else {
			b.WriteString("- roofline floor: n/a\n")
		}
	}
	fmt.Fprintf(b, "- stopped: %s\n", orNA(d.StopReason))
	for _, n := range d.Notes {
		fmt.Fprintf(b, "- %s\n", oneLine(n))
	}
	b.WriteString("\n")
}

func writeFacts(b *bytes.Buffer, d Data) {
	b.WriteString("## Run\n\n| | |\n|---|---|\n")
	row := func(k, v string) { fmt.Fprintf(b, "| %s | %s |\n", k, cell(v)) }
	row("run", d.RunID)
	row("kernel dir", d.kernelDir())
	row("strategy", d.Strategy)
	row("platform", d.Platform)
	row("device", d.Device)
	if d.Isolation != "" {
		row("isolation", d.Isolation)
	}
	row("GPU", orNA(gpuSummary(d.GPU)))
	row("dtype", d.DType)
	if d.Size != "" {
		row("timed size", d.Size)
	}
	row("TF32", d.TF32)
	if d.Work.Bytes > 0 || d.Work.FLOPs > 0 {
		row("work", fmt.Sprintf("%s moved, %s", fmtBytes(d.Work.Bytes), fmtFLOPs(d.Work.FLOPs)))
	}
	correct, rejected, cut := 0, 0, 0
	for _, c := range d.Candidates {
		switch {
		case c.Correct():
			correct++
		case c.Cut:
			cut++
		case c.Status == StatusRejected || c.Status == StatusFailed || c.Failure != "":
			rejected++
		}
	}
	counts := fmt.Sprintf("%d (%d correct, %d rejected or failed", len(d.Candidates), correct, rejected)
	if cut > 0 {
		counts += fmt.Sprintf(", %d cut after a quick timing slower than the best", cut)
	}
	row("candidates", counts+")")
	if src, code := d.Duplicates(); src+code > 0 {
		row("duplicates skipped", fmt.Sprintf("%d (by source %d / by compiled code %d)", src+code, src, code))
	}
	row("LLM", usageText(d.LLM))
	if !d.StartedAt.IsZero() {
		when := d.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC")
		if !d.FinishedAt.IsZero() {
			when += fmt.Sprintf(" (%s)", d.FinishedAt.Sub(d.StartedAt).Round(1e9))
		}
		row("started", when)
	}
	b.WriteString("\n")
}

func writeBaselines(b *bytes.Buffer, d Data) {
	rows := []struct {
		name, subject string // in the table, in a sentence
		s             Stats
	}{{"PyTorch eager", "PyTorch eager", d.Baselines.Eager}, {"torch.compile", "torch.compile", d.Baselines.Compile},
		{"input kernel", "the input kernel", d.Baselines.Input}}
	b.WriteString("## Baselines\n\n| target | median ms | p20 ms | p80 ms | CV | samples | clock |\n|---|--:|--:|--:|--:|--:|---|\n")
	for _, t := range rows {
		if t.s.MedianMS <= 0 && t.s.Unavailable != "" {
			fmt.Fprintf(b, "| %s | n/a: %s | | | | | |\n", t.name, cell(t.s.Unavailable))
			continue
		}
		fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s |\n", t.name, fmtMS(t.s.MedianMS), fmtMS(t.s.P20MS),
			fmtMS(t.s.P80MS), fmtCV(t.s.CV), fmtCount(t.s.N), clockCell(t.s))
	}
	b.WriteString("\n" + clockNote + "\n\n")
	for _, t := range rows {
		if t.s.HostBound {
			if t.s.Clock == "device" {
				fmt.Fprintf(b, "Host-bound: %s had %d of %d timed calls enqueued after the spin ahead of them ended; "+
					"the device may have waited for the host inside those spans, so the time may include host overhead, "+
					"and so may the speedups against it.\n\n", t.subject, t.s.Late, t.s.N)
				continue
			}
			fmt.Fprintf(b, "Host-bound: %s took %s ms of host time per call against its %s ms median; the device may wait "+
				"for the host inside the timed span, so the time includes host overhead and moves with the host's load, "+
				"and so do the speedups against it.\n\n", t.subject, fmtMS(t.s.HostMS), fmtMS(t.s.MedianMS))
		}
	}
}

// clockNote explains the clock column of the baselines.
const clockNote = "Clock: `device`: device events around each call, with a spin kernel enqueued ahead of the start " +
	"event so the host's launch time is outside the span (every time in this report that was taken on a GPU with " +
	"a spin; candidates and baselines alike); `events`: events with no spin ahead, host launch time may be inside; " +
	"`cpu`: the process's CPU time (not representative of a GPU)."

// clockCell is a Stats' clock, with its late calls.
func clockCell(s Stats) string {
	switch {
	case s.Clock == "":
		return "n/a"
	case s.Late > 0:
		return fmt.Sprintf("%s (%d late)", s.Clock, s.Late)
	}
	return s.Clock
}

func writeRounds(b *bytes.Buffer, d Data, der derived) {
	b.WriteString("## Rounds\n\n| round | candidates | correct | best of round ms | best so far ms | best so far | vs eager | vs compile | % of floor |\n" +
		"|--:|--:|--:|--:|--:|---|--:|--:|--:|\n")
	for _, r := range der.rounds {
		e, c, _ := d.speedups(r.BestMS)
		mark := ""
		if r.Improved {
			mark = " ↓"
		}
		fmt.Fprintf(b, "| %d | %d | %d | %s | %s%s | %s | %s | %s | %s |\n", r.Round, r.Made, r.Correct,
			fmtMS(r.RoundBest), fmtMS(r.BestMS), mark, code(r.BestID), fmtX(e), fmtX(c),
			fmtPct(100*d.floorFraction(r.BestMS)))
	}
	b.WriteString("\n")
}

func writeCandidates(b *bytes.Buffer, d Data, der derived) {
	b.WriteString("## Candidates\n\n| id | round | parent | direction | status | median ms | vs eager | vs compile | vs input | % of floor | roofline | LLM |\n" +
		"|---|--:|---|---|---|--:|--:|--:|--:|--:|---|--:|\n")
	for i, c := range d.Candidates {
		id := code(c.ID)
		if i == der.best {
			id = "**" + id + "** ★"
		}
		dir := c.Direction
		if c.Label != "" && !strings.Contains(dir, c.Label) {
			dir = strings.TrimSpace(dir + " " + c.Label)
		}
		if c.Bottleneck > 0 {
			dir = fmt.Sprintf("#%d %s", c.Bottleneck, dir)
		}
		status := c.Status
		if c.Failure != "" {
			status += ": " + c.Failure
		}
		if c.Cut {
			status = "cut: slower than the best"
		}
		ms, e, cm, in, fl := "", "", "", "", ""
		if c.Correct() {
			t := c.Time.MedianMS
			se, sc, si := d.speedups(t)
			ms, e, cm, in, fl = fmtMS(t), fmtX(se), fmtX(sc), fmtX(si), fmtPct(100*d.floorFraction(t))
			if c.Time.Budget != "" {
				// A screening time (halving's early rungs): labelled, and
				// no speedups are drawn from it.
				ms, e, cm, in, fl = fmtMS(t)+" ("+cell(c.Time.Budget)+")", "", "", "", ""
			}
		}
		roof := ""
		switch c.RooflineClass {
		case "":
		case string(roofline.ClassUnknown):
			roof = "n/a"
		default:
			roof = c.RooflineClass
			if c.SOL > 0 {
				roof += fmt.Sprintf(", SOL %s", fmtPct(c.SOL))
			}
		}
		llm := ""
		if c.LLM.Calls > 0 {
			llm = fmt.Sprintf("%d calls, %s", c.LLM.Calls, fmtUSD(c.LLM.CostUSD))
			if c.LLM.EstimatedCalls > 0 {
				llm += " (estimated)"
			}
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", id, c.Round,
			code(c.Parent), cell(dir), cell(status), ms, e, cm, in, fl, cell(roof), llm)
	}
	b.WriteString("\n")
}

func writeRejected(b *bytes.Buffer, d Data) {
	var rows []Candidate
	for _, c := range d.Candidates {
		if !c.Correct() && !c.Cut && (c.Status == StatusRejected || c.Status == StatusFailed || c.Failure != "") {
			rows = append(rows, c)
		}
	}
	b.WriteString("## Rejected candidates\n\n")
	if len(rows) == 0 {
		b.WriteString("None.\n\n")
		return
	}
	b.WriteString("| id | round | check | reason |\n|---|--:|---|---|\n")
	for _, c := range rows {
		check := c.Failure
		if check == "" {
			check = c.Status
		}
		fmt.Fprintf(b, "| %s | %d | %s | %s |\n", code(c.ID), c.Round, cell(check), cell(clip(c.Reason, 300)))
	}
	b.WriteString("\n")
}

// -- formatting ---------------------------------------------------------------

// writeScreening lists the screened variants no other beats at every shape.
func writeScreening(b *bytes.Buffer, d Data) {
	sc := d.Screening
	if sc == nil {
		return
	}
	fmt.Fprintf(b, "## Screened variants\n\n%d variants screened, %d passed (%s).", sc.Variants, sc.Passed, oneLine(sc.Method))
	if len(sc.Pareto) == 0 {
		b.WriteString("\n\n")
		return
	}
	b.WriteString(" No other screened variant beats these at every shape: the timed one")
	if len(sc.Shapes) > 0 {
		b.WriteString(" and the held-out ones")
	}
	b.WriteString(". Screen times rank variants; a candidate's time is its full timing.\n\n| variant | source | candidate | timed shape ms |")
	for _, s := range sc.Shapes {
		fmt.Fprintf(b, " %s ms |", cell(code(s)))
	}
	b.WriteString("\n|---|---|---|--:|" + strings.Repeat("--:|", len(sc.Shapes)) + "\n")
	for _, v := range sc.Pareto {
		fmt.Fprintf(b, "| %s | %s | %s | %s |", cell(code(clip(v.Label, 120))), cell(code(v.Source)), orNA(cell(v.ID)), fmtMS(v.MS))
		for k := range sc.Shapes {
			ms := 0.0
			if k < len(v.ShapesMS) {
				ms = v.ShapesMS[k]
			}
			fmt.Fprintf(b, " %s |", fmtMS(ms))
		}
		b.WriteString("\n")
	}
	if sc.More > 0 {
		fmt.Fprintf(b, "\n%d more, slower at the timed shape, not listed.\n", sc.More)
	}
	b.WriteString("\n")
}

func fmtMS(ms float64) string {
	switch {
	case !(ms > 0) || math.IsInf(ms, 0):
		return "n/a"
	case ms >= 100:
		return fmt.Sprintf("%.1f", ms)
	case ms >= 10:
		return fmt.Sprintf("%.2f", ms)
	case ms >= 0.1:
		return fmt.Sprintf("%.3f", ms)
	default:
		return fmt.Sprintf("%.4f", ms)
	}
}

// fmtSpeedup says how a time compares with a baseline: "2.31× faster" or
// "0.80× (slower)".
func fmtSpeedup(s float64) string {
	switch {
	case s <= 0:
		return "n/a"
	case s >= 1:
		return ratio.String(s) + "× faster"
	default:
		return ratio.String(s) + "× (slower)"
	}
}

// fmtX is a speedup in a table: "2.31×".
func fmtX(s float64) string {
	if s <= 0 {
		return "n/a"
	}
	return ratio.String(s) + "×"
}

func fmtPct(p float64) string {
	if !(p > 0) || math.IsInf(p, 0) {
		return "n/a"
	}
	if p < 10 {
		return fmt.Sprintf("%.1f%%", p)
	}
	return fmt.Sprintf("%.0f%%", p)
}

func fmtCV(cv float64) string {
	if !(cv > 0) || math.IsInf(cv, 0) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f%%", 100*cv)
}

func fmtCount(n int) string {
	if n <= 0 {
		return "n/a"
	}
	return fmt.Sprint(n)
}

func fmtUSD(c float64) string {
	if c >= 0.01 || c == 0 {
		return fmt.Sprintf("$%.2f", c)
	}
	return fmt.Sprintf("$%.4f", c)
}

func fmtBytes(v float64) string {
	if v <= 0 {
		return "n/a bytes"
	}
	return scaled(v, "B")
}

func fmtFLOPs(v float64) string {
	if v <= 0 {
		return "n/a FLOP"
	}
	return scaled(v, "FLOP")
}

// scaled writes v with a decimal SI prefix: 7.52 GB.
func scaled(v float64, unit string) string {
	prefixes := []string{"", "k", "M", "G", "T", "P"}
	i := 0
	for v >= 1000 && i < len(prefixes)-1 {
		v /= 1000
		i++
	}
	return fmt.Sprintf("%.3g %s%s", v, prefixes[i], unit)
}

func gpuSummary(g GPU) string {
	var parts []string
	if g.Name != "" {
		parts = append(parts, g.Name)
	}
	if g.Units > 0 {
		parts = append(parts, fmt.Sprintf("%d SMs", g.Units))
	}
	if g.MemGB > 0 {
		parts = append(parts, fmt.Sprintf("%.0f GB", g.MemGB))
	}
	if g.MemBWGBs > 0 {
		parts = append(parts, fmt.Sprintf("%.0f GB/s", g.MemBWGBs))
	}
	if g.PeakTFLOPS > 0 {
		parts = append(parts, fmt.Sprintf("%.4g TFLOP/s", g.PeakTFLOPS))
	}
	if g.L2MB > 0 {
		parts = append(parts, fmt.Sprintf("L2 %.0f MB", g.L2MB))
	}
	return strings.Join(parts, ", ")
}

// writeModels is the spend per model, when more than one model served the run.
func writeModels(b *bytes.Buffer, d Data) {
	if len(d.Models) < 2 {
		return
	}
	b.WriteString("## LLM models\n\n| model | calls | prompt tokens | completion tokens | cost |\n|---|--:|--:|--:|--:|\n")
	for _, m := range d.Models {
		fmt.Fprintf(b, "| %s | %d | %d | %d%s | %s |\n", cell(code(m.Model)), m.Calls, m.PromptTokens, m.CompletionTokens,
			EstimatedTag(m.EstimatedCalls, m.Calls), fmtUSD(m.CostUSD))
	}
	b.WriteString("\n")
}

func usageText(u Usage) string {
	if u.Calls == 0 {
		return "none"
	}
	return fmt.Sprintf("%d calls, %d prompt + %d completion tokens%s, %s", u.Calls, u.PromptTokens, u.CompletionTokens,
		EstimatedTag(u.EstimatedCalls, u.Calls), fmtUSD(u.CostUSD))
}

func orNA(s string) string {
	if s == "" {
		return "n/a"
	}
	return oneLine(s)
}

// code writes an identifier as inline code ("" stays empty).
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + strings.ReplaceAll(oneLine(s), "`", "'") + "`"
}

// cell makes text safe inside a table cell: one line, pipes escaped.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }

// oneLine folds text onto one line with its control characters escaped:
// reasons and directions come from candidates and LLM replies, and a
// report is often read with cat or less in a terminal.
func oneLine(s string) string { return strings.Join(strings.Fields(termtext.Line(s)), " ") }

func clip(s string, n int) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
