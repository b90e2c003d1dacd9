package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	runreport "github.com/kagent-kernels/kagent/agent/report"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/internal/ratio"
	"github.com/kagent-kernels/kagent/internal/termtext"
	"github.com/kagent-kernels/kagent/platform"
)

func runsCommand() *cli.Command {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "kernel-dir", Aliases: []string{"k"}, Value: ".", Usage: "kernel `DIR` whose run history to read"},
		&cli.StringFlag{Name: "db", Usage: "run history `FILE` (default: KERNEL_DIR/.kagent/history.db)"},
		&cli.BoolFlag{Name: "json", Usage: "print JSON"},
	}
	return &cli.Command{
		Name:  "runs",
		Usage: "list and show the optimization runs of a kernel dir",
		Subcommands: []*cli.Command{
			{Name: "list", Usage: "list the runs, newest first", Flags: flags, Action: runsList},
			{Name: "show", Usage: "show one run: baselines, rounds and every candidate", ArgsUsage: "RUN", Flags: flags, Action: runsShow},
		},
	}
}

// errNoHistory marks a kernel dir without a run history.
var errNoHistory = errors.New("no run history")

// openHistory opens the run history of the kernel dir (or --db).
func openHistory(c *cli.Context) (*store.Store, error) {
	path := historyPath(c, c.String("kernel-dir"))
	_, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, withCode(ExitUsage, fmt.Errorf("%w at %s (give --kernel-dir or --db)", errNoHistory, path))
	case err != nil:
		return nil, usageError("cannot read the run history at %s: %v (give --kernel-dir or --db)", path, err)
	}
	return store.Open(c.Context, path)
}

func runsList(c *cli.Context) error {
	st, err := openHistory(c)
	if errors.Is(err, errNoHistory) {
		// Nothing has run here yet: an empty list, not a mistake.
		if c.Bool("json") {
			return writeJSON(c.App.Writer, []store.Run{})
		}
		fmt.Fprintf(c.App.Writer, "no runs yet (kagent optimize records its runs in %s)\n", historyPath(c, c.String("kernel-dir")))
		return nil
	}
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.ListRuns(c.Context, store.RunFilter{})
	if err != nil {
		return err
	}
	w := c.App.Writer
	if c.Bool("json") {
		return writeJSON(w, runs)
	}
	t := newTable(w)
	t.row("RUN", "STATUS", "STRATEGY", "PLATFORM", "STARTED", "BEST", "BEST ms", "INPUT ms", "SPEEDUP", "STOP")
	for _, r := range runs {
		best, bestMS, inputMS, speedup := "-", "-", "-", "-"
		if r.BestID != "" {
			best = r.BestID
			if b, err := st.Candidate(c.Context, r.ID, r.BestID); err == nil && b.MedianMS() > 0 {
				bestMS = fmt.Sprintf("%.4f", b.MedianMS())
				if r.Baselines.Input != nil && r.Baselines.Input.MedianMS > 0 {
					speedup = ratio.String(r.Baselines.Input.MedianMS/b.MedianMS()) + "x"
				}
			}
		}
		if r.Baselines.Input != nil && r.Baselines.Input.MedianMS > 0 {
			inputMS = fmt.Sprintf("%.4f", r.Baselines.Input.MedianMS)
		}
		t.row(r.ID, string(r.Status), r.Strategy, r.Platform, r.StartedAt.Local().Format(time.DateTime), best, bestMS, inputMS, speedup, clipLine(r.StopReason, 60))
	}
	return t.flush()
}

func runsShow(c *cli.Context) error {
	if c.NArg() != 1 {
		return usageError("runs show: give one RUN id (see kagent runs list)")
	}
	st, err := openHistory(c)
	if err != nil {
		return err
	}
	defer st.Close()
	d, err := st.GetRun(c.Context, c.Args().First())
	if errors.Is(err, store.ErrNotFound) {
		return usageError("no run %s (see kagent runs list)", c.Args().First())
	}
	if err != nil {
		return err
	}
	usage, err := st.LLMUsage(c.Context, d.ID)
	if err != nil {
		return err
	}
	w := c.App.Writer
	if c.Bool("json") {
		return writeJSON(w, struct {
			*store.RunDetail
			LLMUsage store.Usage `json:"llm_usage"`
		}{d, usage})
	}
	fmt.Fprintf(w, "run:       %s (%s)\n", d.ID, d.Status)
	fmt.Fprintf(w, "kernel:    %s (%s)\n", d.KernelDir, d.Problem)
	fmt.Fprintf(w, "strategy:  %s on %s %s\n", d.Strategy, d.Platform, d.Device)
	fmt.Fprintf(w, "started:   %s", d.StartedAt.Local().Format(time.DateTime))
	if !d.FinishedAt.IsZero() {
		fmt.Fprintf(w, ", finished %s (%s)", d.FinishedAt.Local().Format(time.DateTime), d.FinishedAt.Sub(d.StartedAt).Round(time.Second))
	}
	fmt.Fprintln(w)
	if d.StopReason != "" {
		fmt.Fprintf(w, "stopped:   %s\n", d.StopReason)
	}
	if d.Resumes > 0 {
		fmt.Fprintf(w, "resumed:   %d time(s)\n", d.Resumes)
	}
	fmt.Fprintf(w, "best:      %s\n", orDash(d.BestID))
	fmt.Fprintf(w, "baselines: eager %s, compile %s, input %s\n", timingText(d.Baselines.Eager), timingText(d.Baselines.Compile), timingText(d.Baselines.Input))
	if usage.Calls > 0 {
		fmt.Fprintf(w, "llm:       %d calls (%d failed), %d tokens%s, $%.2f%s\n", usage.Calls, usage.Failed,
			usage.PromptTokens+usage.CompletionTokens, runreport.EstimatedTag(usage.EstimatedCalls, usage.Calls), usage.CostUSD, modelCosts(usage))
	}
	fmt.Fprintln(w)
	t := newTable(w)
	t.row("CANDIDATE", "ROUND", "PARENT", "DIRECTION", "STATUS", "MEDIAN ms", "SOL", "FAILURE")
	for _, cd := range d.Candidates {
		ms, sol, fail := "-", "-", ""
		if cd.MedianMS() > 0 {
			ms = fmt.Sprintf("%.4f", cd.MedianMS())
		}
		if cd.Roofline != nil && cd.Roofline.SOL > 0 {
			sol = fmt.Sprintf("%.1f%%", cd.Roofline.SOL)
		}
		if cd.Verdict != nil && !cd.Verdict.Passed {
			fail = cd.Verdict.Failure + ": " + cd.Verdict.Reason
		} else if cd.Error != "" {
			fail = cd.Error
		}
		mark := ""
		if cd.ID == d.BestID {
			mark = " *"
		}
		t.row(cd.ID+mark, fmt.Sprint(cd.Round), orDash(cd.ParentID), clipLine(cd.Direction, 48), string(cd.Status), ms, sol, clipLine(fail, 80))
	}
	return t.flush()
}

// timingText is a baseline's median, or why it is missing.
func timingText(t *platform.Timing) string {
	switch {
	case t == nil:
		return "-"
	case t.Unavailable != "":
		return "unavailable"
	}
	return fmt.Sprintf("%.4f ms", t.MedianMS)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// modelCosts is " (MODEL $X, ...)" when more than one model served
// a run (llm.steps), "" otherwise.
func modelCosts(u store.Usage) string {
	if len(u.ByModel) < 2 {
		return ""
	}
	var parts []string
	for _, m := range slices.Sorted(maps.Keys(u.ByModel)) {
		parts = append(parts, fmt.Sprintf("%s $%.2f", clipLine(termtext.Line(m), 60), u.ByModel[m].CostUSD))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// clipLine folds s onto one line of at most n bytes.
func clipLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
