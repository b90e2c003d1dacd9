package sweep

import (
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/internal/ratio"
)

// TimestampPrefix starts the one line of report.md that depends on when it
// was written; everything else is a function of the manifest and the
// per-problem results, so a merge of shards and a local run with the same
// results write the same report.
const TimestampPrefix = "Generated "

// Markdown renders report.md: fast_p for every p of Ps against PyTorch eager
// and torch.compile, the geometric-mean speedups, a table of the problems
// and the failures. results may lack problems (counted as not correct).
func Markdown(m Manifest, results []ProblemResult, now time.Time) []byte {
	v := newView(m, results)
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("# kagent sweep: %s\n\n", v.title())
	w("%s%s by kagent sweep.\n\n", TimestampPrefix, now.UTC().Format(time.RFC3339))
	if v.notRepresentative != "" {
		w("> **Not representative:** these times were not taken on a GPU (platform %s); they check the pipeline, not kernel speed.\n\n", v.notRepresentative)
	}

	w("## Summary\n\n| | |\n|---|---|\n")
	w("| problems | %s |\n", v.counts())
	w("| source | %s |\n", cell(sourceLine(m)))
	w("| strategy | %s |\n", cell(orDash(m.Strategy)))
	w("| platform | %s |\n", cell(v.platforms()))
	w("| first kernels | %s |\n", v.origins())
	w("| LLM | %s |\n", v.llm())
	w("| time per problem | %s |\n", v.times())
	w("\n")

	w("## fast_p\n\n")
	w("fast_p is the fraction of the %d selected problems whose final kernel is correct and faster than the baseline by more than p "+
		"(KernelBench's metric; speedup = baseline median time / kernel median time; a problem without a result or a baseline counts as not fast).\n\n", len(m.Problems))
	w("Every time here is the %s of the timed calls, and so are those of the KernelBench files: `runtime` in %s and `mean` in %s and %s "+
		"(the fields KernelBench's benchmark_eval_analysis.py divides; the arithmetic mean is `arithmetic_mean`), so that script, given these baseline files, "+
		"computes the fast_p above. KernelBench's own baseline files hold means: against them, speedups divide a mean by a median.\n\n",
		timeStatistic, EvalResultsFile, BaselineEagerFile, BaselineCompileFile)
	w("| p | vs PyTorch eager | vs torch.compile |\n|--:|--:|--:|\n")
	eager, compile := v.outcomes(false), v.outcomes(true)
	for _, p := range Ps {
		w("| %s | %s | %s |\n", fmtP(p), v.fastCell(eager, p, v.haveEager), v.fastCell(compile, p, v.haveCompile))
	}
	w("\n")
	w("Geometric-mean speedup of the correct problems: %s vs PyTorch eager, %s vs torch.compile.\n\n",
		geoCell(eager, v.haveEager, v.eagerWhy), geoCell(compile, v.haveCompile, v.compileWhy))
	w("![fast_p against PyTorch eager and torch.compile](%s)\n\n", PlotFile)

	w("## Problems\n\n")
	w("| id | problem | status | first kernel | kernel ms | eager ms | compile ms | vs eager | vs compile | vs first | stop | LLM calls | wall s |\n")
	w("|--:|---|---|---|--:|--:|--:|--:|--:|--:|---|--:|--:|\n")
	for _, p := range m.Problems {
		r, ok := v.by[p.ID]
		if !ok {
			w("| %d | %s | no result | | | | | | | | | | |\n", p.ID, cell(p.Name))
			continue
		}
		w("| %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", p.ID, cell(p.Name), statusCell(r), originCell(r),
			msCell(r.Kernel), msCell(r.Eager), msCell(r.Compile), speedupCell(r.SpeedupEager), speedupCell(r.SpeedupCompile),
			speedupCell(r.SpeedupInput), cell(clip(r.StopReason, 60)), countCell(r.LLM.Calls), secondsCell(r.WallSeconds))
	}
	w("\n")
	if clocks := v.clocks(); clocks != "" {
		w("Clocks: %s (`device`: device events after a spin kernel, the host's launch time outside the span; "+
			"`events`: no spin, host time may be inside; `cpu`: process CPU time).\n\n", clocks)
	}
	if ids := v.noisy(); len(ids) > 0 {
		w("Some times carry a note (problems %s): \"CV\" when measured with a coefficient of variation above %.0f%%, "+
			"\"host-bound\" when the host's time per call came near the median (the time then includes host overhead). "+
			"The speedups computed from them are uncertain, and another run may give others.\n\n", strings.Join(ids, ", "), 100*NoisyCV)
	}

	var failed []ProblemResult
	for _, p := range m.Problems {
		if r, ok := v.by[p.ID]; ok && !r.Correct {
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		w("## Failures\n\n| id | problem | status | reason |\n|--:|---|---|---|\n")
		for _, r := range failed {
			w("| %d | %s | %s | %s |\n", r.ID, cell(r.Name), r.Status, cell(clip(failureReason(r), 400)))
		}
		w("\n")
	}
	return []byte(b.String())
}

// view is what the report derives from the results.
type view struct {
	m  Manifest
	by map[int]ProblemResult
	// haveEager / haveCompile: some result has that baseline; the *Why
	// fields say why none has.
	haveEager, haveCompile bool
	eagerWhy, compileWhy   string
	notRepresentative      string
}

func newView(m Manifest, results []ProblemResult) view {
	v := view{m: m, by: map[int]ProblemResult{}}
	selected := map[int]bool{}
	for _, p := range m.Problems {
		selected[p.ID] = true
	}
	var np []string
	for _, r := range results {
		if !selected[r.ID] {
			continue
		}
		v.by[r.ID] = r
		v.haveEager = v.haveEager || r.Eager != nil
		v.haveCompile = v.haveCompile || r.Compile != nil
		if v.eagerWhy == "" {
			v.eagerWhy = r.EagerUnavailable
		}
		if v.compileWhy == "" {
			v.compileWhy = r.CompileUnavailable
		}
		if r.Kernel != nil && !r.Representative && !slices.Contains(np, r.Platform) {
			np = append(np, r.Platform)
		}
	}
	slices.Sort(np)
	v.notRepresentative = strings.Join(np, ", ")
	return v
}

// ordered lists the results in the manifest's order.
func (v view) ordered() []ProblemResult {
	var out []ProblemResult
	for _, p := range v.m.Problems {
		if r, ok := v.by[p.ID]; ok {
			out = append(out, r)
		}
	}
	return out
}

func (v view) title() string {
	if v.m.Level > 0 {
		return fmt.Sprintf("KernelBench level %d, problems %s", v.m.Level, v.m.Selection)
	}
	return "problems " + v.m.Selection
}

// sourceLine names the problems folder by its base name: the report holds
// no absolute path, and shards may see the folder at other paths.
func sourceLine(m Manifest) string {
	src := filepath.Base(m.Source)
	if m.Level > 0 {
		return fmt.Sprintf("%s (level %d)", src, m.Level)
	}
	return src
}

// outcomes lists one outcome per selected problem (no result: not correct).
func (v view) outcomes(compile bool) []Outcome {
	out := make([]Outcome, len(v.m.Problems))
	for i, p := range v.m.Problems {
		if r, ok := v.by[p.ID]; ok {
			out[i] = r.Outcome(compile)
		}
	}
	return out
}

func (v view) counts() string {
	var correct, failed, errs, incorrect int
	for _, r := range v.by {
		switch {
		case r.Correct:
			correct++
		case r.Status == StatusFailed:
			failed++
		case r.Status == StatusError:
			errs++
		default:
			incorrect++
		}
	}
	parts := []string{fmt.Sprintf("%d selected", len(v.m.Problems)), fmt.Sprintf("%d correct", correct), fmt.Sprintf("%d failed", failed)}
	if incorrect > 0 {
		parts = append(parts, fmt.Sprintf("%d incorrect", incorrect))
	}
	parts = append(parts, plural(errs, "error"))
	if missing := len(v.m.Problems) - len(v.by); missing > 0 {
		parts = append(parts, fmt.Sprintf("%d without a result", missing))
	}
	return strings.Join(parts, ", ")
}

func (v view) platforms() string {
	seen := map[string]bool{}
	var out []string
	for _, r := range v.by {
		if r.Platform == "" {
			continue
		}
		s := r.Platform
		if r.Device != "" {
			s += " (" + r.Device + ")"
		}
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return orDash(strings.Join(out, ", "))
}

func (v view) origins() string {
	gen, sup := 0, 0
	for _, r := range v.by {
		switch r.Origin {
		case "generated":
			gen++
		case "supplied":
			sup++
		}
	}
	return fmt.Sprintf("%d generated, %d supplied", gen, sup)
}

func (v view) llm() string {
	var u Usage
	for _, r := range v.ordered() { // a float sum: in a fixed order
		u.Calls += r.LLM.Calls
		u.Tokens += r.LLM.Tokens
		u.EstimatedCalls += r.LLM.EstimatedCalls
		u.CostUSD += r.LLM.CostUSD
	}
	if u.Calls == 0 {
		return "none"
	}
	return fmt.Sprintf("%d calls, %d tokens%s, $%.2f", u.Calls, u.Tokens, report.EstimatedTag(u.EstimatedCalls, u.Calls), u.CostUSD)
}

// times states the median wall time per problem and the median harness
// overhead (wall time minus LLM time).
func (v view) times() string {
	var wall, over []float64
	for _, r := range v.by {
		if r.WallSeconds > 0 {
			wall = append(wall, r.WallSeconds)
			over = append(over, max(0, r.WallSeconds-r.LLM.Seconds))
		}
	}
	if len(wall) == 0 {
		return "-"
	}
	return fmt.Sprintf("median %.1f s wall, %.1f s besides LLM calls (%d problems)", median(wall), median(over), len(wall))
}

func (v view) fastCell(outs []Outcome, p float64, have bool) string {
	if !have {
		return "n/a"
	}
	return fmt.Sprintf("%.3f (%d/%d)", FastP(outs, p), fastCount(outs, p), len(outs))
}

func geoCell(outs []Outcome, have bool, why string) string {
	if !have {
		if why != "" {
			return "n/a (" + cell(why) + ")"
		}
		return "n/a"
	}
	g, n := GeoMean(outs)
	if n == 0 {
		return "n/a (no correct problem)"
	}
	return fmt.Sprintf("**%s×** (%d problems)", ratio.String(g), n)
}

func statusCell(r ProblemResult) string {
	switch {
	case r.Correct:
		return "correct"
	case r.Status == StatusDone:
		return "incorrect"
	}
	return string(r.Status)
}

func originCell(r ProblemResult) string {
	s := r.Origin
	if g := r.Generation; g != nil && g.Winner != "" {
		s += fmt.Sprintf(" (%s, %s)", g.Winner, plural(g.Seeds, "seed"))
	}
	return s
}

func failureReason(r ProblemResult) string {
	if r.Error != "" {
		return r.Error
	}
	return "the final kernel did not verify"
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func fmtP(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

func msCell(t *Timing) string {
	if t == nil {
		return "n/a"
	}
	var notes []string
	if cv := t.cv(); cv > NoisyCV {
		notes = append(notes, fmt.Sprintf("CV %.0f%%", 100*cv))
	}
	if t.HostBound {
		notes = append(notes, "host-bound")
	}
	if len(notes) > 0 {
		return fmt.Sprintf("%s (%s)", fmtMS(t.MedianMS), strings.Join(notes, ", "))
	}
	return fmtMS(t.MedianMS)
}

// uncertain: a time whose speedups the report qualifies.
func (t *Timing) uncertain() bool {
	return t != nil && (t.cv() > NoisyCV || t.HostBound)
}

// NoisyCV is the coefficient of variation above which the report shows a
// time's CV beside it: the speedups computed from it are uncertain.
const NoisyCV = 0.05

// cv is the timing's coefficient of variation (0 when unknown).
func (t *Timing) cv() float64 {
	if t == nil || !(t.MeanMS > 0) || !(t.StdMS >= 0) {
		return 0
	}
	return t.StdMS / t.MeanMS
}

// clocks says which clocks timed the report's times, with how many each
// ("device: 42, events: 3"); "" when none is known.
func (v view) clocks() string {
	count := map[string]int{}
	for _, p := range v.m.Problems {
		if r, ok := v.by[p.ID]; ok {
			for _, t := range []*Timing{r.Kernel, r.Eager, r.Compile} {
				if t != nil && t.Clock != "" {
					count[t.Clock]++
				}
			}
		}
	}
	var parts []string
	for _, c := range []string{"device", "events", "cpu"} {
		if count[c] > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d", c, count[c]))
		}
	}
	return strings.Join(parts, ", ")
}

// noisy lists the ids of the problems with a kernel or baseline time above
// NoisyCV or host-bound, in manifest order.
func (v view) noisy() []string {
	var ids []string
	for _, p := range v.m.Problems {
		r, ok := v.by[p.ID]
		if ok && (r.Kernel.uncertain() || r.Eager.uncertain() || r.Compile.uncertain()) {
			ids = append(ids, strconv.Itoa(p.ID))
		}
	}
	return ids
}

// fmtMS prints milliseconds with 4 significant digits (at least one
// decimal).
func fmtMS(v float64) string {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return "n/a"
	}
	digits := min(max(3-int(math.Floor(math.Log10(v))), 1), 9)
	return strconv.FormatFloat(v, 'f', digits, 64)
}

func speedupCell(s float64) string {
	if s <= 0 {
		return "n/a"
	}
	return ratio.String(s) + "×"
}

func countCell(n int) string {
	if n == 0 {
		return ""
	}
	return strconv.Itoa(n)
}

func secondsCell(s float64) string {
	if s <= 0 {
		return ""
	}
	return strconv.FormatFloat(s, 'f', 1, 64)
}

// cell escapes text for a markdown table cell.
func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return strings.ReplaceAll(s, "|", `\|`)
}

func clip(s string, n int) string {
	r := []rune(strings.Join(strings.Fields(s), " "))
	if len(r) <= n {
		return string(r)
	}
	return string(r[:n]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
