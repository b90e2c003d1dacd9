package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

func profileCommand() *cli.Command {
	return &cli.Command{
		Name:  "profile",
		Usage: "profile a kernel dir's kernel and place it on the GPU's roofline",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "kernel-dir", Aliases: []string{"k"}, Usage: "kernel `DIR`: the folder holding problem.py and input.py (or kernel.py)"},
			&cli.StringFlag{Name: "kernel", Usage: "profile this `FILE` instead of the kernel dir's input.py"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			noProgressFlag(),
		}, configFlags()...),
		Action: runProfile,
	}
}

type profileReport struct {
	Kernel   string           `json:"kernel"`
	Platform string           `json:"platform"`
	GPU      string           `json:"gpu"`
	Metrics  roofline.Metrics `json:"metrics"`
	Roofline roofline.Result  `json:"roofline"`
	Seconds  float64          `json:"profile_seconds"`
	// ProblemFloorMS is the floor of the problem itself: its inputs read and
	// outputs written once at peak bandwidth, or its FLOPs at peak rate.
	ProblemFloorMS float64 `json:"problem_floor_ms,omitempty"`
}

func runProfile(c *cli.Context) error {
	d := newDisplay(c)
	defer d.Close()
	s, sess, cand, err := openKernel(c, "profile", d)
	if err != nil {
		return err
	}
	defer sess.Close()
	specs, err := platform.SpecsOf(c.Context, s.platform, sess)
	if err != nil {
		return err
	}
	d.start("profile", "loading the problem, profiling "+filepath.Base(cand.Path))
	start := time.Now()
	m, err := sess.Profile(c.Context, cand)
	if err != nil {
		return err
	}
	d.Close()
	rep := profileReport{Kernel: cand.Path, Platform: s.platform.Name(), GPU: specs.Name, Metrics: m,
		Roofline: s.platform.Analyzer().Analyze(m, specs), Seconds: time.Since(start).Seconds()}
	if f, err := sess.Floor(c.Context); err == nil {
		rep.ProblemFloorMS = f
	}
	if c.Bool("json") {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(c.App.Writer, string(b))
		return nil
	}
	printProfile(c.App.Writer, rep)
	return nil
}

func printProfile(w io.Writer, r profileReport) {
	m, rl := r.Metrics, r.Roofline
	fmt.Fprintf(w, "kernel:   %s\nplatform: %s on %s (profiled in %.1f s, source %s)\n", r.Kernel, r.Platform, r.GPU, r.Seconds, m.Source)
	if m.Fallback != "" {
		fmt.Fprintf(w, "fallback: %s\n", m.Fallback)
	}
	if len(m.Kernels) > 0 {
		fmt.Fprintf(w, "kernels:  %s\n", strings.Join(m.Kernels, ", "))
	}
	t := newTable(w)
	t.row("METRIC", "VALUE")
	t.row("time", fmt.Sprintf("%.4f ms", m.TimeMS))
	t.row("bytes read / written", byteSize(m.BytesRead)+" / "+byteSize(m.BytesWrite))
	if rl.AchievedGBs > 0 {
		t.row("achieved bandwidth", sig3(rl.AchievedGBs)+" GB/s")
	}
	if m.FLOPs > 0 {
		t.row("flops", fmt.Sprintf("%.3g (%s TFLOP/s)", m.FLOPs, sig3(rl.AchievedTFLOPS)))
	}
	if rl.Placed() {
		t.row("compute SOL", fmt.Sprintf("%.1f%%", rl.ComputeSOL))
		t.row("memory SOL", fmt.Sprintf("%.1f%%", rl.MemorySOL))
		t.row("class", string(rl.Class))
		t.row("headroom", fmt.Sprintf("%.1f%%", rl.Headroom))
		t.row("at roofline", fmt.Sprint(rl.AtRoofline))
	} else {
		na := "n/a (" + orDash(rl.Unplaced) + ")"
		t.row("SOL", na)
		t.row("class", na)
		t.row("headroom", na)
	}
	if rl.FloorMS > 0 {
		t.row("its traffic at peak", fmt.Sprintf("%.4f ms (the bytes and FLOPs this kernel moved, at peak rates)", rl.FloorMS))
	}
	if r.ProblemFloorMS > 0 && m.TimeMS > 0 {
		t.row("problem floor", fmt.Sprintf("%.4f ms (inputs read and outputs written once; the kernel takes %sx)", r.ProblemFloorMS, ratio.String(m.TimeMS/r.ProblemFloorMS)))
	}
	_ = t.flush()
	for _, wr := range append(append([]string(nil), rl.Warnings...), m.Warnings...) {
		fmt.Fprintf(w, "warning: %s\n", wr)
	}
	if len(m.Raw) > 0 {
		keys := make([]string, 0, len(m.Raw))
		for k := range m.Raw {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		fmt.Fprintln(w, "\nraw metrics:")
		rt := newTable(w)
		for _, k := range keys {
			rt.row("  "+k, fmt.Sprintf("%.6g", m.Raw[k]))
		}
		_ = rt.flush()
	}
}

// sig3 prints a positive rate with three significant digits ("0.00332",
// "287", "4800"), so a small one does not print as 0.
func sig3(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// byteSize prints a byte count with a decimal prefix and three significant
// digits ("262 kB", "2.15 GB"), so a small one does not print as 0.000 GB.
func byteSize(v float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB"}
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	return sig3(v) + " " + units[i]
}
