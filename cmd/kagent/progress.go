package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/internal/statusline"
	"github.com/kagent-kernels/kagent/sweep"
)

// spinEvery is how often the status line's spinner turns.
const spinEvery = 125 * time.Millisecond

// noProgressFlag is --no-progress of the commands that show a status line.
func noProgressFlag() cli.Flag {
	return &cli.BoolFlag{Name: "no-progress", Usage: "plain progress lines only, no status line rewritten in place " +
		"(the status line is shown where stderr is a terminal, stdout is not a pipe, CI is unset and KAGENT_PROGRESS is not 0)"}
}

// display is the progress of optimize, eval, profile and sweep on a
// terminal: a status line on stderr that says what runs and for how long,
// rewritten in place; the command's output and log scroll above it. Where
// stdout is the terminal too, a run's steps show on the status line and
// only the lines worth keeping (each round's result, promotions,
// rejections) stay; where stdout goes to a file, the file gets every plain
// progress line. A nil *display is plain output: its methods do nothing.
type display struct {
	line *statusline.Line
	// stdoutTerm: stdout is a terminal, so the display prints the run's
	// lines that stay and the plain progress lines are not printed.
	stdoutTerm bool
	restore    func()
}

// newDisplay starts the display where stderr is a terminal and stdout is
// not a pipe, CI is not set, and neither --no-progress nor
// KAGENT_PROGRESS=0 asks for plain output; nil elsewhere. From here to
// Close, the command's output and log pass through it: make the logger
// (logger(c)) after it.
func newDisplay(c *cli.Context) *display {
	ci := os.Getenv("CI")
	if c.Bool("no-progress") || progressOff(os.Getenv("KAGENT_PROGRESS")) || ci != "" && !progressOff(ci) {
		return nil
	}
	if _, ok := statusline.TerminalWidth(os.Stderr); !ok {
		return nil
	}
	_, stdoutTerm := statusline.TerminalWidth(os.Stdout)
	if !stdoutTerm && intoPipe(os.Stdout) {
		// What reads the pipe (tee, grep) may echo it to the terminal,
		// where it would land on the status line: plain lines only.
		return nil
	}
	width := func() int {
		w, _ := statusline.TerminalWidth(os.Stderr)
		return w
	}
	l := statusline.New(os.Stderr, statusline.Options{Width: width, Tick: spinEvery})
	w, ew := c.App.Writer, c.App.ErrWriter
	c.App.Writer, c.App.ErrWriter = l.Above(w), l.Above(ew)
	return &display{line: l, stdoutTerm: stdoutTerm, restore: func() { c.App.Writer, c.App.ErrWriter = w, ew }}
}

// intoPipe reports whether f is a pipe or a socket.
func intoPipe(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// progressOff reads KAGENT_PROGRESS (and CI) as a switch: 0, false, off
// and no turn it off.
func progressOff(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "0", "false", "off", "no":
		return true
	}
	return false
}

// Close takes the status line away and gives the command its writers back.
func (d *display) Close() {
	if d == nil {
		return
	}
	d.line.Close()
	d.restore()
}

// start begins a phase of the status line.
func (d *display) start(label, detail string) {
	if d != nil {
		d.line.Start(label, detail)
	}
}

// status says what the phase does now.
func (d *display) status(detail string) {
	if d != nil {
		d.line.Status(detail)
	}
}

// done ends the phase, its status line leaving nothing behind.
func (d *display) done() {
	if d != nil {
		d.line.Done("")
	}
}

// progress is the writer of a run's plain progress lines: stdout, unless
// the display shows them.
func (d *display) progress(stdout io.Writer) io.Writer {
	if d != nil && d.stdoutTerm {
		return nil
	}
	return stdout
}

// events returns a writer for the run's JSON-lines events (agent
// RunInput.Events) that shows them on the status line; nil without a
// display.
func (d *display) events() io.Writer {
	if d == nil {
		return nil
	}
	return eventWriter(d)
}

// keep prints a line that stays, where stdout is the terminal (elsewhere
// stdout has every progress line).
func (d *display) keep(line string) {
	if d.stdoutTerm {
		d.line.Print(line)
	}
}

// event shows one step of a run: each round on one status line that ends
// as the round's result; promotions, rejections and the run's first and
// last lines stay.
func (d *display) event(ev agent.Event) {
	line := agent.ProgressLine(ev)
	round := ""
	if ev.Round != nil {
		round = fmt.Sprintf("round %d", *ev.Round)
	}
	step := strings.TrimPrefix(line, round+": ")
	passed := ev.Passed == nil || *ev.Passed
	switch ev.Event {
	case agent.EventRunStarted:
		d.keep(line)
		d.line.Start("kagent", "round 0 next")
	case agent.EventRoundStarted:
		what := fmt.Sprintf("%d candidate%s: written, verified, timed", ev.Slots, plural(ev.Slots))
		if ev.Round != nil && *ev.Round == 0 {
			what = "verifying the input kernel, timing it, PyTorch eager and torch.compile"
		}
		d.line.Start(round, what)
	case agent.EventCandidateVerified:
		if !passed {
			d.keep(line)
			d.line.Status(ev.Candidate + " rejected")
			return
		}
		d.line.Status(ev.Candidate + " verified; timing it")
	case agent.EventCandidateTimed:
		if !passed {
			d.keep(line)
		}
		d.line.Status(step)
	case agent.EventPromoted:
		d.keep(line)
		d.line.Status(ev.Candidate + " promoted")
	case agent.EventRoundFinished:
		if d.stdoutTerm {
			d.line.Done(line)
		} else {
			d.line.Done("")
		}
		d.line.Start("kagent", "next round, or the acceptance gate and the report")
	case agent.EventRunFinished:
		d.line.Done("")
		d.keep(line)
	}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// lineSplitter hands each complete line written to it to each.
type lineSplitter struct {
	mu      sync.Mutex
	pending []byte
	each    func(line []byte)
}

func (w *lineSplitter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, p...)
	for {
		i := bytes.IndexByte(w.pending, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.each(w.pending[:i])
		w.pending = w.pending[i+1:]
	}
}

// eventWriter decodes a run's JSON-lines events for the display.
func eventWriter(d *display) io.Writer {
	return &lineSplitter{each: func(line []byte) {
		var ev agent.Event
		if json.Unmarshal(line, &ev) == nil {
			d.event(ev)
		}
	}}
}

// lineWriter shows each line written to it as the status line's detail (a
// sweep's problem runs, whose plain lines a sweep does not print).
func lineWriter(d *display) io.Writer {
	return &lineSplitter{each: func(line []byte) {
		if s := strings.TrimSpace(string(line)); s != "" {
			d.line.Status(s)
		}
	}}
}

// shownRunner shows the problems a sweep runs on the status line; the
// lines of their runs (lineWriter) say what each does.
type shownRunner struct {
	sweep.Runner
	d *display

	mu      sync.Mutex
	running []string
}

func (r *shownRunner) RunProblem(ctx context.Context, job sweep.Job) (sweep.ProblemResult, error) {
	key := job.Problem.Key()
	r.show(func() { r.running = append(r.running, key) })
	defer r.show(func() { r.running = slices.DeleteFunc(r.running, func(k string) bool { return k == key }) })
	return r.Runner.RunProblem(ctx, job)
}

// show changes the running problems and shows them.
func (r *shownRunner) show(change func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	change()
	if len(r.running) == 0 {
		r.d.line.Done("")
		return
	}
	r.d.line.Start(strings.Join(r.running, ", "), "starting")
}
