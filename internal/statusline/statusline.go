// Package statusline shows what a long command is doing on a terminal: one
// status line at the foot of the output, rewritten in place (a spinner, the
// phase, what it is doing, how long the phase has taken), with the lines the
// command prints scrolling above it. A phase's line may end as a line that
// stays (Done).
//
// Its text is untrusted (kernel names, LLM text): every control character is
// shown escaped (internal/termtext), and the status is cut to the terminal's
// width, so that it never wraps (a wrapped line cannot be rewritten in
// place). Lines that stay are escaped but not cut.
package statusline

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kagent-kernels/kagent/internal/termtext"
)

// Terminal control sequences: carriage return, and erase to the end of the
// line (ECMA-48 EL).
const (
	cr        = "\r"
	eraseLine = "\x1b[K"
)

// frames are the spinner's, ASCII so that every terminal font has them.
const frames = `|/-\`

// DefaultWidth is the width assumed where the terminal does not say.
const DefaultWidth = 80

// minWidth is the narrowest status line drawn; a terminal narrower than
// this gets none (a line that wraps cannot be rewritten).
const minWidth = 20

// Options configure a Line.
type Options struct {
	// Width is the terminal's width in columns, asked before every draw
	// (nil, or a result of 0 or less: DefaultWidth).
	Width func() int
	// Now is the clock of the phases' times (nil: time.Now).
	Now func() time.Time
	// Tick is how often the spinner turns and the time is drawn again; 0
	// draws only on changes (tests turn it with Tick).
	Tick time.Duration
}

// Line is the status line of one terminal. Safe for concurrent use.
type Line struct {
	mu    sync.Mutex
	term  io.Writer
	width func() int
	now   func() time.Time

	label, detail string
	since         time.Time
	frame         int
	active        bool // a phase is under way
	drawn         bool // its status line is on the screen
	closed        bool
	above         []*aboveWriter

	stop, stopped chan struct{}
}

// New starts a status line on term, the terminal (not a writer that
// escapes control characters: the line is rewritten with them).
func New(term io.Writer, o Options) *Line {
	l := &Line{term: term, width: o.Width, now: o.Now}
	if l.now == nil {
		l.now = time.Now
	}
	if o.Tick > 0 {
		l.stop, l.stopped = make(chan struct{}), make(chan struct{})
		go l.spin(o.Tick)
	}
	return l
}

func (l *Line) spin(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	defer close(l.stopped)
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			l.Tick()
		}
	}
}

// Start begins a phase: the status line shows label and detail, and the
// phase's clock starts.
func (l *Line) Start(label, detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.label, l.detail = termtext.Line(label), termtext.Line(detail)
	l.since, l.active = l.now(), true
	l.draw()
}

// Status changes what the phase is doing; its clock runs on. Without a
// phase under way it starts one with no label.
func (l *Line) Status(detail string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.active {
		l.label, l.since, l.active = "", l.now(), true
	}
	l.detail = termtext.Line(detail)
	l.draw()
}

// Done ends the phase: its status line gives way to final, a line that
// stays ("" leaves none).
func (l *Line) Done(final string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	l.active = false
	if final != "" && !l.closed {
		io.WriteString(l.term, termtext.Line(final)+"\n")
	}
}

// Print prints text as a line that stays, above the status line.
func (l *Line) Print(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.clear()
	io.WriteString(l.term, termtext.Line(text)+"\n")
	l.draw()
}

// Tick turns the spinner and draws the status line again (its time moves).
func (l *Line) Tick() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active {
		l.frame++
		l.draw()
	}
}

// Above returns a writer for another stream to the same terminal (the
// command's output, its log): each complete line written to it is written
// to w with the status line out of the way, and the status line is drawn
// again under it. A line not yet ended is held until its end, or Close.
// It writes what it is given as it is: w escapes what needs escaping.
func (l *Line) Above(w io.Writer) io.Writer {
	l.mu.Lock()
	defer l.mu.Unlock()
	a := &aboveWriter{l: l, w: w}
	l.above = append(l.above, a)
	return a
}

// Close clears the status line, stops the spinner and writes what the
// writers of Above hold; they write straight through afterwards. Closing
// again does nothing.
func (l *Line) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.clear()
	l.active = false
	var err error
	for _, a := range l.above {
		if len(a.pending) > 0 {
			if _, werr := a.w.Write(a.pending); werr != nil && err == nil {
				err = werr
			}
			a.pending = nil
		}
	}
	l.mu.Unlock()
	if l.stop != nil {
		close(l.stop)
		<-l.stopped
	}
	return err
}

// draw writes the status line over the one on the screen. Called with mu held.
func (l *Line) draw() {
	if !l.active || l.closed {
		return
	}
	width := DefaultWidth
	if l.width != nil {
		if w := l.width(); w > 0 {
			width = w
		}
	}
	if width < minWidth {
		l.clear()
		return
	}
	io.WriteString(l.term, cr+l.render(width-1)+eraseLine)
	l.drawn = true
}

// clear takes the status line off the screen. Called with mu held.
func (l *Line) clear() {
	if l.drawn {
		io.WriteString(l.term, cr+eraseLine)
		l.drawn = false
	}
}

// render is the status line in at most cols columns: the spinner, the
// label and detail (cut to fit) and the phase's time, which is always
// shown.
func (l *Line) render(cols int) string {
	elapsed := " (" + Elapsed(l.now().Sub(l.since)) + ")"
	text := l.label
	switch {
	case text == "":
		text = l.detail
	case l.detail != "":
		text += ": " + l.detail
	}
	head := string(frames[l.frame%len(frames)]) + " "
	room := cols - Width(head) - Width(elapsed)
	if room < 4 {
		return Cut(head+text, cols)
	}
	return head + Cut(text, room) + elapsed
}

// Elapsed writes a duration for a person: 7s, 4m05s, 1h02m.
func Elapsed(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", max(s, 0))
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
}

// Cut shortens s to at most cols columns, ending it with "..." where it cut.
func Cut(s string, cols int) string {
	if Width(s) <= cols {
		return s
	}
	const more = "..."
	if cols <= len(more) {
		return more[:max(cols, 0)]
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		w := runeWidth(r)
		if used+w > cols-len(more) {
			break
		}
		b.WriteRune(r)
		used += w
	}
	return b.String() + more
}

// Width is the number of columns s takes on a terminal, counted on the
// high side: two for the wide characters of East Asian scripts and emoji,
// one for any other (combining marks included), so that a line cut to a
// width never wraps.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

func runeWidth(r rune) int {
	switch {
	case r >= 0x1100 && r <= 0x115f, // Hangul Jamo
		r >= 0x2e80 && r <= 0xa4cf,   // CJK radicals .. Yi
		r >= 0xac00 && r <= 0xd7a3,   // Hangul syllables
		r >= 0xf900 && r <= 0xfaff,   // CJK compatibility ideographs
		r >= 0xfe30 && r <= 0xfe4f,   // CJK compatibility forms
		r >= 0xff00 && r <= 0xff60,   // fullwidth forms
		r >= 0xffe0 && r <= 0xffe6,   // fullwidth signs
		r >= 0x1f300 && r <= 0x1faff, // emoji and pictographs
		r >= 0x20000 && r <= 0x3fffd: // CJK extensions
		return 2
	}
	return 1
}

// aboveWriter is a writer of Line.Above.
type aboveWriter struct {
	l       *Line
	w       io.Writer
	pending []byte // the start of a line not yet ended
}

func (a *aboveWriter) Write(p []byte) (int, error) {
	l := a.l
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return a.w.Write(p)
	}
	a.pending = append(a.pending, p...)
	end := bytes.LastIndexByte(a.pending, '\n')
	if end < 0 {
		return len(p), nil
	}
	lines := a.pending[:end+1]
	l.clear()
	_, err := a.w.Write(lines)
	a.pending = append([]byte(nil), a.pending[end+1:]...)
	l.draw()
	if err != nil {
		return 0, err
	}
	return len(p), nil
}
