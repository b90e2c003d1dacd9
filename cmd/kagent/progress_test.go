package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent"
	"github.com/kagent-kernels/kagent/internal/statusline"
)

// screenOf is what a terminal shows after raw: carriage returns, newlines
// and erase-to-end-of-line interpreted (no line is wider than the test's
// terminal), trailing empty lines dropped.
func screenOf(t *testing.T, raw string) []string {
	t.Helper()
	lines := [][]rune{nil}
	row, col := 0, 0
	for i := 0; i < len(raw); {
		switch {
		case strings.HasPrefix(raw[i:], "\x1b[K"):
			if col < len(lines[row]) {
				lines[row] = lines[row][:col]
			}
			i += 3
			continue
		case raw[i] == '\r':
			col = 0
		case raw[i] == '\n':
			row, col = row+1, 0
			if row == len(lines) {
				lines = append(lines, nil)
			}
		case raw[i] < 0x20 || raw[i] == 0x7f:
			t.Fatalf("control character %q reached the terminal: %q", raw[i], raw)
		default:
			r := []rune(raw[i:])[0]
			if col < len(lines[row]) {
				lines[row][col] = r
			} else {
				lines[row] = append(lines[row], r)
			}
			col++
			i += len(string(r))
			continue
		}
		i++
	}
	var out []string
	for _, l := range lines {
		out = append(out, string(l))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// runEvents is a two-round run: a rejection, a promotion, and a direction
// (LLM text) holding escape sequences.
func runEvents() []agent.Event {
	r0, r1 := 0, 1
	yes, no := true, false
	return []agent.Event{
		{Event: agent.EventRunStarted, RunID: "run1", KernelDir: "/k", Strategy: "greedy", Platform: "cpu", RunDir: "/k/.kagent/runs/run1"},
		{Event: agent.EventRoundStarted, Round: &r0, Slots: 1},
		{Event: agent.EventCandidateVerified, Round: &r0, Candidate: "input", Passed: &yes},
		{Event: agent.EventCandidateTimed, Round: &r0, Candidate: "input", MedianMS: 2, CV: 0.01},
		{Event: agent.EventRoundFinished, Round: &r0, BestID: "input", BestMS: 2, SpeedupVsInput: 1},
		{Event: agent.EventRoundStarted, Round: &r1, Slots: 2},
		{Event: agent.EventCandidateVerified, Round: &r1, Candidate: "r1c1", Direction: "fuse \x1b[2J the passes", Passed: &yes},
		{Event: agent.EventCandidateVerified, Round: &r1, Candidate: "r1c2", Passed: &no, Failure: "correctness", Reason: "max abs error 3.2\x1b]0;owned\x07"},
		{Event: agent.EventCandidateTimed, Round: &r1, Candidate: "r1c1", MedianMS: 1, CV: 0.02},
		{Event: agent.EventPromoted, Round: &r1, Candidate: "r1c1", BestMS: 1, ImprovementPct: 50, SpeedupVsInput: 2},
		{Event: agent.EventRoundFinished, Round: &r1, BestID: "r1c1", BestMS: 1, SpeedupVsInput: 2},
		{Event: agent.EventRunFinished, RunID: "run1", Status: "finished", StopReason: "max_rounds: 1 rounds", BestID: "r1c1", BestMS: 1, SpeedupVsInput: 2},
	}
}

// TestDisplayOfARun: on a terminal (stdout one too) each round shows on one
// status line that ends as the round's result; the run's first and last
// lines, promotions and rejections stay, with untrusted text escaped; the
// rest passes. Where stdout is not the terminal (it gets the plain lines)
// nothing stays on the terminal.
func TestDisplayOfARun(t *testing.T) {
	evs := runEvents()
	line := func(i int) string { return agent.ProgressLine(evs[i]) }
	for _, stdoutTerm := range []bool{true, false} {
		var term bytes.Buffer
		d := &display{line: statusline.New(&term, statusline.Options{Width: func() int { return 400 }}), stdoutTerm: stdoutTerm, restore: func() {}}
		w := d.events()
		var sawStatus []string
		for _, ev := range evs {
			b, _ := json.Marshal(ev)
			// Written in two pieces, as a writer may be.
			w.Write(b[:len(b)/2])
			w.Write(append(b[len(b)/2:], '\n'))
			if s := screenOf(t, term.String()); len(s) > 0 {
				sawStatus = append(sawStatus, s[len(s)-1])
			}
		}
		d.Close()
		got := screenOf(t, term.String())
		var want []string
		if stdoutTerm {
			want = []string{line(0), line(4), line(7), line(9), line(10), line(11)}
			for i := range want {
				want[i] = strings.NewReplacer("\x1b", `\x1b`, "\x07", `\x07`).Replace(want[i])
			}
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("stdout a terminal %v: screen\n%s\nwant\n%s", stdoutTerm, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		all := strings.Join(sawStatus, "\n")
		for _, w := range []string{"round 0: verifying the input kernel", "round 1: 2 candidates", "round 1: r1c1 verified; timing it", `r1c2 rejected`} {
			if !strings.Contains(all, w) {
				t.Errorf("stdout a terminal %v: no status line said %q:\n%s", stdoutTerm, w, all)
			}
		}
	}
}

// TestProgressInAPipe: where stdout and stderr are pipes (and CI is unset)
// optimize prints its plain progress lines, one per event of --events, with
// no status line and no terminal control sequence.
func TestProgressInAPipe(t *testing.T) {
	dir := cpuKernelDir(t)
	srv := scriptedServer(t, "fast.py")
	events := filepath.Join(t.TempDir(), "events.jsonl")
	cfg := writeConfig(t, "strategy: greedy\n"+promoteRealGains)
	r := runEnv(t, dir, []string{"CI"}, "optimize", "--kernel-dir", ".", "--platform", "cpu", "--config", cfg, "--max-rounds", "1",
		"--llm-provider", "openai", "--llm-base-url", srv.BaseURL(), "--llm-model", "fake", "--events", events)
	if r.code != ExitOK {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.ContainsAny(r.stdout+r.stderr, "\r\x1b") {
		t.Errorf("terminal control characters in a pipe:\n%q\n%q", r.stdout, r.stderr)
	}
	f, err := os.Open(events)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ev agent.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if l := agent.ProgressLine(ev); l != "" {
			want = append(want, l)
		}
	}
	got := strings.Split(r.stdout, "\n")
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Errorf("stdout does not start with the events' progress lines:\n%s\nwant:\n%s", r.stdout, strings.Join(want, "\n"))
	}
	if len(want) < 6 {
		t.Errorf("only %d progress lines:\n%s", len(want), r.stdout)
	}
}

// TestNoProgressSwitches: --no-progress is a flag of the commands that show
// a status line; KAGENT_PROGRESS and CI read as switches.
func TestNoProgressSwitches(t *testing.T) {
	for _, cmd := range []string{"optimize", "eval", "profile", "sweep"} {
		r := run(t, t.TempDir(), cmd, "--help")
		if !strings.Contains(r.stdout, "--no-progress") {
			t.Errorf("%s --help lacks --no-progress", cmd)
		}
	}
	for v, off := range map[string]bool{"0": true, "false": true, " OFF ": true, "no": true, "1": false, "": false, "true": false} {
		if progressOff(v) != off {
			t.Errorf("progressOff(%q) = %v", v, !off)
		}
	}
}
