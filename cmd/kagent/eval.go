package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/internal/safefile"
	"github.com/kagent-kernels/kagent/platform"
)

func evalCommand() *cli.Command {
	return &cli.Command{
		Name:  "eval",
		Usage: "verify a kernel dir's kernel and time it against PyTorch eager and torch.compile",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "kernel-dir", Aliases: []string{"k"}, Usage: "kernel `DIR`: the folder holding problem.py and input.py (or kernel.py)"},
			&cli.StringFlag{Name: "kernel", Usage: "evaluate this `FILE` instead of the kernel dir's input.py"},
			&cli.BoolFlag{Name: "json", Usage: "print the result as JSON"},
			&cli.Float64Flag{Name: "min-speedup", Usage: "exit 3 unless the kernel is at least this many times faster than --against"},
			&cli.StringFlag{Name: "against", Value: "eager", Usage: "baseline for --min-speedup: eager or compile"},
			noProgressFlag(),
		}, configFlags()...),
		Action: runEval,
	}
}

// evalReport is what eval prints.
type evalReport struct {
	Kernel         string             `json:"kernel"`
	Platform       string             `json:"platform"`
	Device         string             `json:"device"`
	Size           string             `json:"size"`
	Verdict        platform.Verdict   `json:"verdict"`
	Timings        []platform.Timing  `json:"timings"`
	SpeedupVs      map[string]float64 `json:"speedup_vs,omitempty"`
	FloorMS        float64            `json:"floor_ms,omitempty"`
	FloorFrac      float64            `json:"fraction_of_floor,omitempty"`
	Problems       []string           `json:"problems,omitempty"`
	Representative bool               `json:"representative"`
	// Isolation is how candidates were kept from the judge (worker platforms).
	Isolation string `json:"isolation,omitempty"`
}

func runEval(c *cli.Context) error {
	against := c.String("against")
	if against != "eager" && against != "compile" {
		return usageError("--against %q: give eager or compile", against)
	}
	d := newDisplay(c)
	defer d.Close()
	s, sess, cand, err := openKernel(c, "eval", d)
	if err != nil {
		return err
	}
	defer sess.Close()
	rep := evalReport{Kernel: cand.Path, Platform: s.platform.Name(), Size: s.task.Options.SizeLabel(), SpeedupVs: map[string]float64{}}
	about := sess.About()
	rep.Device, rep.Isolation = about.Device, about.Isolation
	d.start("eval", "loading the problem, verifying "+filepath.Base(cand.Path))
	v, err := sess.Verify(c.Context, cand)
	if err != nil {
		return err
	}
	rep.Verdict = v
	// A kernel that failed verification is not timed, nor are the
	// baselines it would be compared with (minutes on a large problem).
	var targets []platform.Target
	if v.Passed {
		targets = []platform.Target{{Kind: platform.TargetKernel, Candidate: cand}, {Kind: platform.TargetEager},
			{Kind: platform.TargetCompile}}
	}
	byKind := map[platform.TargetKind]platform.Timing{}
	for _, t := range targets {
		d.start("eval", "timing "+targetName(t, cand))
		tm, err := sess.Time(c.Context, t)
		if f, ok := platform.FaultOf(err); ok {
			rep.Verdict = failVerdict(rep.Verdict, f.Check, f.Reason)
			if tm.N == 0 {
				continue // nothing was timed (a hang, a crash)
			}
		} else if err != nil {
			return err
		}
		rep.Representative = tm.Representative
		rep.Timings = append(rep.Timings, tm)
		byKind[t.Kind] = tm
	}
	k, ok := byKind[platform.TargetKernel]
	if ok && rep.Verdict.Passed && k.MedianMS > 0 {
		for _, b := range []platform.TargetKind{platform.TargetEager, platform.TargetCompile} {
			if bt, ok := byKind[b]; ok && bt.MedianMS > 0 && bt.Unavailable == "" {
				rep.SpeedupVs[string(b)] = bt.MedianMS / k.MedianMS
			}
		}
		if floor, err := sess.Floor(c.Context); err == nil && floor > 0 {
			rep.FloorMS, rep.FloorFrac = floor, floor/k.MedianMS
		}
	}
	d.Close()
	if c.Bool("json") {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(c.App.Writer, string(b))
	} else {
		printEval(c.App.Writer, rep)
	}
	if !rep.Verdict.Passed {
		return withCode(ExitError, fmt.Errorf("verification failed: %s: %s", rep.Verdict.Failure, rep.Verdict.Reason))
	}
	if min := c.Float64("min-speedup"); min > 0 {
		got, ok := rep.SpeedupVs[against]
		if !ok {
			return withCode(ExitError, fmt.Errorf("--min-speedup: no %s time to compare with", against))
		}
		if got < min {
			return withCode(ExitNoImprovement, fmt.Errorf("speedup over %s is %.3fx, below --min-speedup %.3fx", against, got, min))
		}
	}
	return nil
}

// targetName names a timed target on the status line.
func targetName(t platform.Target, cand platform.Candidate) string {
	switch t.Kind {
	case platform.TargetEager:
		return "PyTorch eager"
	case platform.TargetCompile:
		return "torch.compile"
	}
	return filepath.Base(cand.Path)
}

// openKernel loads the kernel dir and opens a session on a platform that
// runs kernels, for the commands that measure one kernel (eval, profile):
// the kernel dir's input kernel, or the file --kernel names. d shows the
// workers starting.
func openKernel(c *cli.Context, verb string, d *display) (*runSetup, platform.Session, platform.Candidate, error) {
	var cand platform.Candidate
	s, err := setup(c)
	if err != nil {
		return nil, nil, cand, err
	}
	if !s.platform.Executes() {
		return nil, nil, cand, usageError("%s runs kernels; the %s platform executes nothing (choose --platform %s)", verb, s.platform.Name(),
			configs.Words(configs.ExecutingPlatforms(), "or"))
	}
	cand = platform.Candidate{ID: "input", Path: s.task.KernelPath, Source: s.task.KernelSource}
	if k := c.String("kernel"); k != "" {
		p := absPath(k)
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // the file the user named, wherever a link of theirs points
		}
		src, err := safefile.ReadPath(p, safefile.MaxPython)
		if err != nil {
			return nil, nil, cand, usageError("--kernel: %v", err)
		}
		cand = platform.Candidate{ID: "kernel", Path: p, Source: string(src)}
	}
	d.start(verb, "starting the Python worker")
	sess, err := s.platform.Open(c.Context, s.task)
	if err != nil {
		return nil, nil, cand, err
	}
	return s, sess, cand, nil
}

func failVerdict(v platform.Verdict, name, reason string) platform.Verdict {
	v.Passed = false
	if v.Failure == "" {
		v.Failure, v.Reason = name, reason
	}
	v.Checks = append(v.Checks, platform.Check{Name: name, Reason: reason})
	return v
}

func printEval(w io.Writer, r evalReport) {
	fmt.Fprintf(w, "kernel:   %s\nplatform: %s %s\nsize:     %s\n", r.Kernel, r.Platform, r.Device, r.Size)
	if r.Isolation != "" {
		fmt.Fprintf(w, "isolation: %s\n", r.Isolation)
	}
	status := "PASSED"
	if !r.Verdict.Passed {
		status = "FAILED " + r.Verdict.Failure + ": " + r.Verdict.Reason
	}
	fmt.Fprintf(w, "verify:   %s (%s)\n", status, r.Verdict.Duration.Round(1e6))
	var names []string
	for _, ch := range r.Verdict.Checks {
		mark := "ok"
		switch {
		case ch.Skipped:
			mark = "skipped"
		case !ch.Passed:
			mark = "FAIL"
		}
		names = append(names, ch.Name+" "+mark)
	}
	fmt.Fprintf(w, "checks:   %s\n", strings.Join(names, ", "))
	if r.Verdict.TF32 != "" {
		fmt.Fprintf(w, "tf32:     %s (reference and kernel)\n", r.Verdict.TF32)
	}
	if len(r.Timings) == 0 {
		fmt.Fprintln(w, "timing:   not timed (the kernel failed verification; nor were the baselines)")
		return
	}
	t := newTable(w)
	t.row("TARGET", "MEDIAN ms", "P20 ms", "P80 ms", "CV", "N", "CLOCK", "SPEEDUP")
	for _, tm := range r.Timings {
		if tm.Unavailable != "" {
			t.row(tm.Target, "-", "-", "-", "-", "-", "-", "unavailable: "+tm.Unavailable)
			continue
		}
		clock := tm.Clock
		if clock == "" {
			clock = "-"
		} else if tm.LateCalls > 0 {
			clock += fmt.Sprintf(" (%d late)", tm.LateCalls)
		}
		sp := ""
		if tm.Target != "eager" && tm.Target != "compile" {
			var parts []string
			for _, b := range []string{"eager", "compile"} {
				if x, ok := r.SpeedupVs[b]; ok {
					parts = append(parts, ratio.String(x)+"x vs "+b)
				}
			}
			sp = strings.Join(parts, ", ")
		}
		t.row(tm.Target, fmt.Sprintf("%.4f", tm.MedianMS), fmt.Sprintf("%.4f", tm.P20MS), fmt.Sprintf("%.4f", tm.P80MS), fmt.Sprintf("%.2f%%", 100*tm.CV), fmt.Sprint(tm.N), clock, sp)
	}
	_ = t.flush()
	for _, tm := range r.Timings {
		if tm.HostBound() && (tm.Clock == platform.ClockDevice || tm.Clock == platform.ClockProfiler) {
			fmt.Fprintf(w, "host-bound: %s had %d of %d timed calls enqueued after the spin ahead of them ended: "+
				"the device may have waited for the host inside those spans\n", tm.Target, tm.LateCalls, tm.N)
		} else if tm.HostBound() {
			fmt.Fprintf(w, "host-bound: %s takes %.4f ms of host time per call against a %.4f ms median: "+
				"the device may wait for the host inside the timed span, so this time includes host overhead and moves with the host's load\n",
				tm.Target, tm.HostMS, tm.MedianMS)
		}
	}
	if r.FloorMS > 0 {
		fmt.Fprintf(w, "roofline floor: %.4f ms; the kernel runs at %.1f%% of it\n", r.FloorMS, 100*r.FloorFrac)
	}
	if !r.Representative {
		fmt.Fprintln(w, "note: timings on this platform are not representative of GPU performance")
	}
}
