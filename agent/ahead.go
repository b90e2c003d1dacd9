package agent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/search"
)

// compileAhead hands a round's new knob variants to the session's compiler
// before the first of them is verified (platform.CompileAheader): their
// Triton compiles then run at once on several threads, not one per
// verification in turn. Variants a screen of this run loaded are left out
// (their screen compiled them). It never decides anything: an error is
// logged and each variant compiles at its verification, as without it.
func (l *loop) compileAhead(ctx context.Context, r int, slots []search.Slot, chains map[int][]store.Candidate) {
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
