package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search"
)

// aheadOverheadS is what one compile-ahead batch costs besides the compiles
// themselves: a runner's start, its device context, the variants' imports
// and calls. On an H200 (2026-12-04, KernelBench level 1 at full size) a
// batch of 5–8 variants took 0.66–1.05 s where each variant's own compile
// took 0.06–0.07 s: there the batch cost more than it saved.
const aheadOverheadS = 0.7

// compileSeconds is the median of the Triton compile seconds the run's
// verified candidates reported (their verdicts' triton_compiles, where
// their runner compiled something), and how many reported one.
func compileSeconds(all []store.Candidate) (float64, int) {
	var xs []float64
	for _, c := range all {
		if v := c.Verdict; v != nil && v.TritonCompiles != nil && v.TritonCompiles.Compiled > 0 {
			xs = append(xs, v.TritonCompiles.Seconds)
		}
	}
	if len(xs) == 0 {
		return 0, 0
	}
	slices.Sort(xs)
	return xs[len(xs)/2], len(xs)
}

// aheadWorth: a batch of n variants whose compiles take perS seconds each
// is expected to save at least twice its own cost.
func aheadWorth(n int, perS float64) bool {
	return float64(n)*perS >= 2*aheadOverheadS
}

// compileAhead hands a round's new knob variants to the session's compiler
// before the first of them is verified (platform.CompileAheader): their
// Triton compiles then run at once on several threads, not one per
// verification in turn. Variants a screen of this run loaded are left out
// (their screen compiled them). It runs only where the run's candidates so
// far took long enough to compile (compileSeconds) that the round's
// compiles are expected to take at least twice aheadOverheadS; the compile
// times are the runners' claims, which decide nothing but this. It never
// decides anything else: an error is logged and each variant compiles at
// its verification, as without it.
func (l *loop) compileAhead(ctx context.Context, r int, slots []search.Slot, chains map[int][]store.Candidate, all []store.Candidate) {
	ca, ok := l.in.Session.(platform.CompileAheader)
	if !ok {
		return
	}
	var sources []string
	for _, s := range slots {
		if s.Variant == nil || s.Retime != "" || len(chains[s.Index]) > 0 {
			continue // an LLM slot, a retiming, or a slot a resumed run has begun
		}
		if l.scr != nil && l.scr.screened(store.SourceHash(s.Variant.Source)) {
			continue
		}
		sources = append(sources, s.Variant.Source)
	}
	if len(sources) < 2 {
		return // one variant compiles at its verification just as fast
	}
	if per, n := compileSeconds(all); !aheadWorth(len(sources), per) {
		l.log.Debug("compile ahead: not worth a batch", "round", r, "variants", len(sources), "compile_s", per, "measured", n)
		return
	}
	dir, err := os.MkdirTemp("", "kagent-ahead-")
	if err != nil {
		l.log.Warn("compile ahead", "round", r, "err", err)
		return
	}
	defer os.RemoveAll(dir)
	name := "kernel.py"
	if l.in.Task != nil && l.in.Task.KernelPath != "" {
		name = filepath.Base(l.in.Task.KernelPath)
	}
	cs := make([]platform.Candidate, 0, len(sources))
	for i, src := range sources {
		p := filepath.Join(dir, fmt.Sprintf("%d", i), name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err == nil {
			err = os.WriteFile(p, []byte(src), 0o644)
		}
		if err != nil {
			l.log.Warn("compile ahead", "round", r, "err", err)
			return
		}
		cs = append(cs, platform.Candidate{ID: fmt.Sprintf("ahead-r%dv%d", r, i+1), Path: p, Source: src})
	}
	start := time.Now()
	rep, err := ca.CompileAhead(ctx, cs)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("compile ahead", "round", r, "variants", len(cs), "err", err)
		}
		return
	}
	if rep.Skipped != "" {
		return
	}
	l.log.Info("compiled ahead", "round", r, "variants", len(cs), "loaded", rep.Loaded, "kernels", rep.Compiled,
		"took", time.Since(start).Round(time.Millisecond))
	if rep.Error != "" {
		l.log.Warn("compile ahead ended early", "round", r, "reason", oneLine(rep.Error))
	}
}
