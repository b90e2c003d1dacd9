package statusline

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeTerm is a terminal of a given width: it keeps the screen's lines and
// the cursor, interprets carriage return, newline (as the tty's ONLCR does)
// and erase-to-end-of-line, wraps at the right margin, and records every
// other control character it is sent (none may reach it).
type fakeTerm struct {
	t      *testing.T
	mu     sync.Mutex
	width  int
	lines  [][]rune
	row    int
	col    int
	wraps  int
	writes int
	raw    strings.Builder
}

func newFakeTerm(t *testing.T, width int) *fakeTerm {
	return &fakeTerm{t: t, width: width, lines: [][]rune{nil}}
}

func (f *fakeTerm) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	s := string(p)
	f.raw.WriteString(s)
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], eraseLine):
			line := f.lines[f.row]
			if f.col < len(line) {
				f.lines[f.row] = line[:f.col]
			}
			i += len(eraseLine)
			continue
		case s[i] == '\r':
			f.col = 0
		case s[i] == '\n':
			f.newline()
		case s[i] < 0x20 || s[i] == 0x7f:
			f.t.Errorf("control character %q reached the terminal in %q", s[i], s)
		default:
			r := []rune(s[i:])[0]
			if f.col >= f.width {
				f.wraps++
				f.newline()
			}
			line := f.lines[f.row]
			for len(line) < f.col {
				line = append(line, ' ')
			}
			if f.col < len(line) {
				line[f.col] = r
			} else {
				line = append(line, r)
			}
			f.lines[f.row] = line
			f.col++
			i += len(string(r))
			continue
		}
		i++
	}
	return len(p), nil
}

func (f *fakeTerm) newline() {
	f.row++
	f.col = 0
	if f.row == len(f.lines) {
		f.lines = append(f.lines, nil)
	}
}

// screen is the terminal's lines, trailing blanks and the empty last line
// dropped.
func (f *fakeTerm) screen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, l := range f.lines {
		out = append(out, strings.TrimRight(string(l), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// clock is a settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLine(t *testing.T, width int) (*Line, *fakeTerm, *clock) {
	term := newFakeTerm(t, width)
	c := &clock{t: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)}
	return New(term, Options{Width: func() int { return term.width }, Now: c.now}), term, c
}

func sameScreen(t *testing.T, term *fakeTerm, want ...string) {
	t.Helper()
	got := term.screen()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("screen:\n%q\nwant:\n%q", got, want)
	}
}

// TestRewritesInPlace: every change of the status redraws the one line;
// the spinner turns and the phase's time moves on each tick.
func TestRewritesInPlace(t *testing.T) {
	l, term, c := newLine(t, 80)
	l.Start("round 1", "writing 2 candidates")
	sameScreen(t, term, "| round 1: writing 2 candidates (0s)")
	c.t = c.t.Add(3 * time.Second)
	l.Status("r1c1 verified; timing it")
	sameScreen(t, term, "| round 1: r1c1 verified; timing it (3s)")
	c.t = c.t.Add(62 * time.Second)
	l.Tick()
	sameScreen(t, term, "/ round 1: r1c1 verified; timing it (1m05s)")
	l.Tick()
	l.Tick()
	l.Tick()
	sameScreen(t, term, "| round 1: r1c1 verified; timing it (1m05s)")
	l.Start("round 2", "")
	sameScreen(t, term, "| round 2 (0s)")
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	sameScreen(t, term)
	if term.wraps != 0 {
		t.Errorf("%d lines wrapped", term.wraps)
	}
}

// TestFinalLineKept: Done leaves the phase's final line on the screen and
// the next phase draws below it; Print puts a line above the status.
func TestFinalLineKept(t *testing.T) {
	l, term, c := newLine(t, 80)
	l.Start("round 0", "verifying the input")
	c.t = c.t.Add(8 * time.Second)
	l.Print("round 0: input rejected: oom: too large")
	sameScreen(t, term, "round 0: input rejected: oom: too large", "| round 0: verifying the input (8s)")
	l.Done("round 0: best input 152.6 ms")
	sameScreen(t, term, "round 0: input rejected: oom: too large", "round 0: best input 152.6 ms")
	l.Tick() // no phase: nothing drawn
	l.Start("round 1", "writing 1 candidate")
	sameScreen(t, term, "round 0: input rejected: oom: too large", "round 0: best input 152.6 ms", "| round 1: writing 1 candidate (0s)")
	l.Done("")
	l.Close()
	sameScreen(t, term, "round 0: input rejected: oom: too large", "round 0: best input 152.6 ms")
	l.Start("round 2", "after close") // draws nothing
	l.Done("after close")
	sameScreen(t, term, "round 0: input rejected: oom: too large", "round 0: best input 152.6 ms")
}

// TestWidth: the status line is cut to the terminal's width (asked at every
// draw), keeping the phase's time; it never wraps; a terminal too narrow
// gets none.
func TestWidth(t *testing.T) {
	l, term, c := newLine(t, 30)
	c.t = c.t.Add(5 * time.Second)
	detail := "r1c1 (memory: x is read twice: one pass for the sum of squares, a second to scale)"
	l.Start("round 1", detail)
	got := term.screen()
	if len(got) != 1 || Width(got[0]) > 29 || !strings.HasSuffix(got[0], "... (0s)") || !strings.HasPrefix(got[0], "| round 1: r1c1") {
		t.Errorf("at 30 columns: %q", got)
	}
	term.width = 120
	l.Tick()
	got = term.screen()
	if len(got) != 1 || !strings.Contains(got[0], "a second to scale) (0s)") {
		t.Errorf("at 120 columns: %q", got)
	}
	term.width = 12
	l.Tick()
	sameScreen(t, term)
	term.width = 40
	l.Status("宽字符的候选内核名称很长很长很长很长很长")
	got = term.screen()
	if len(got) != 1 || Width(got[0]) > 39 {
		t.Errorf("wide characters at 40 columns: %q (%d columns)", got, Width(got[0]))
	}
	if term.wraps != 0 {
		t.Errorf("%d lines wrapped", term.wraps)
	}
}

// TestAboveInterleaves: lines written through Above (the command's output,
// its log) scroll above the status line, which is drawn again under each;
// a line not yet ended waits for its end, or for Close.
func TestAboveInterleaves(t *testing.T) {
	l, term, _ := newLine(t, 80)
	out := l.Above(term)
	l.Start("eval", "verifying input")
	out.Write([]byte("level=INFO msg=\"baseline timed again\"\n"))
	sameScreen(t, term, `level=INFO msg="baseline timed again"`, "| eval: verifying input (0s)")
	out.Write([]byte("kernel: inp"))
	sameScreen(t, term, `level=INFO msg="baseline timed again"`, "| eval: verifying input (0s)")
	out.Write([]byte("ut.py\nplatform: cpu\nsize: "))
	sameScreen(t, term, `level=INFO msg="baseline timed again"`, "kernel: input.py", "platform: cpu", "| eval: verifying input (0s)")
	l.Close()
	sameScreen(t, term, `level=INFO msg="baseline timed again"`, "kernel: input.py", "platform: cpu", "size:")
	out.Write([]byte("cpu\n"))
	sameScreen(t, term, `level=INFO msg="baseline timed again"`, "kernel: input.py", "platform: cpu", "size: cpu")
}

// TestUntrustedText: escape sequences and line breaks in a label, a detail
// or a kept line are shown escaped; only the line's own carriage returns
// and erases reach the terminal.
func TestUntrustedText(t *testing.T) {
	l, term, _ := newLine(t, 120)
	l.Start("round 1", "r1c1 (\x1b[2J\x1b]0;owned\x07 faster\r\nround 1: best r1c1 0.001 ms\u202e)")
	l.Print("round 1: r1c1 rejected: \x1b[32mPASSED\x1b[0m")
	l.Done("round 1: best \x1b[1Ar1c1")
	got := strings.Join(term.screen(), "\n")
	for _, w := range []string{`\x1b[32mPASSED\x1b[0m`, `round 1: best \x1b[1Ar1c1`} {
		if !strings.Contains(got, w) {
			t.Errorf("screen lacks %q:\n%s", w, got)
		}
	}
	raw := strings.ReplaceAll(term.raw.String(), eraseLine, "")
	if strings.ContainsAny(raw, "\x1b\x07\u202e") {
		t.Errorf("raw output holds control characters: %q", term.raw.String())
	}
}

// TestSpinnerStops: with Tick set the spinner turns on its own until Close,
// and nothing is written after Close returns.
func TestSpinnerStops(t *testing.T) {
	term := newFakeTerm(t, 80)
	l := New(term, Options{Tick: time.Millisecond})
	l.Start("eval", "timing")
	deadline := time.Now().Add(10 * time.Second)
	for {
		term.mu.Lock()
		n := term.writes
		term.mu.Unlock()
		if n >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the spinner did not turn")
		}
		time.Sleep(time.Millisecond)
	}
	l.Close()
	term.mu.Lock()
	n := term.writes
	term.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	term.mu.Lock()
	defer term.mu.Unlock()
	if term.writes != n {
		t.Errorf("%d writes after Close", term.writes-n)
	}
}

func TestElapsed(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {1400 * time.Millisecond, "1s"}, {59 * time.Second, "59s"},
		{65 * time.Second, "1m05s"}, {time.Hour + 2*time.Minute + 59*time.Second, "1h02m"},
	} {
		if got := Elapsed(tc.d); got != tc.want {
			t.Errorf("Elapsed(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		s    string
		cols int
		want string
	}{
		{"short", 10, "short"}, {"exactly10!", 10, "exactly10!"}, {"a longer line", 10, "a longe..."},
		{"宽字符宽字符", 7, "宽字..."}, {"abc", 2, ".."}, {"abcdef", 0, ""},
	} {
		if got := Cut(tc.s, tc.cols); got != tc.want || Width(got) > tc.cols {
			t.Errorf("Cut(%q, %d) = %q, want %q", tc.s, tc.cols, got, tc.want)
		}
	}
}
