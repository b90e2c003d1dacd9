// Package termtext makes untrusted text safe to print to a terminal or a log:
// worker error messages, a candidate's exception text, check reasons, LLM
// replies and kernel snippets may carry escape sequences that move the
// cursor, erase lines, set the window title or reorder text, and so repaint
// a failure as a pass. Clean renders every such character as a visible
// escape (ESC as \x1b, CR as \r, U+202E as \u202e), so the text still shows
// what was there but the terminal interprets none of it. Characters past
// ASCII are written as \uXXXX, which JSON reads back as the same character,
// so cleaned JSON stays valid JSON.
//
// kagent's command line writes everything through a Writer, so no output
// path can forget it.
package termtext

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"unicode/utf8"
)

// Writer cleans everything written through it (as Clean: newlines and tabs
// stay) before passing it on. A character split across two writes is held
// until its last byte arrives. Safe for concurrent use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer
	pending []byte // the first bytes of an unfinished UTF-8 sequence
}

// NewWriter returns a Writer that writes cleaned text to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write cleans p and writes it; it reports len(p) when the cleaned text was
// written whole.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	buf := append(w.pending, p...)
	w.pending = nil
	// Hold back a trailing sequence that is the start of a valid character.
	for k := 1; k <= 3 && k <= len(buf); k++ {
		tail := buf[len(buf)-k:]
		if utf8.RuneStart(tail[0]) {
			if tail[0] >= utf8.RuneSelf && !utf8.FullRune(tail) {
				w.pending = append([]byte(nil), tail...)
				buf = buf[:len(buf)-k]
			}
			break
		}
	}
	if _, err := io.WriteString(w.w, Clean(string(buf))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Clean returns s with every control character escaped: C0 controls but
// newline and tab, DEL, C1 controls, bidirectional formatting characters
// and the other invisible format characters that change how text reads.
// Invalid UTF-8 bytes are escaped as \xNN. Use it for multi-line text.
func Clean(s string) string {
	return clean(s, false)
}

// Line is Clean for text printed on one line: newlines and tabs become
// spaces as well.
func Line(s string) string {
	return clean(s, true)
}

func clean(s string, oneLine bool) string {
	if safe(s, oneLine) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n' || r == '\t':
			if oneLine {
				b.WriteByte(' ')
			} else {
				b.WriteRune(r)
			}
		case r == '\r':
			b.WriteString(`\r`)
		case unsafeRune(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// safe is the fast path: nothing to change.
func safe(s string, oneLine bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= utf8.RuneSelf || c < 0x20 || c == 0x7f {
			if c == '\n' || c == '\t' {
				if oneLine {
					return false
				}
				continue
			}
			if c < utf8.RuneSelf {
				return false
			}
			// Non-ASCII: decide rune by rune.
			for _, r := range s[i:] {
				if r == utf8.RuneError || unsafeRune(r) || oneLine && (r == '\n' || r == '\t') {
					return false
				}
			}
			return true
		}
	}
	return true
}

// unsafeRune reports the characters Clean escapes (newline and tab aside).
func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f: // C0, DEL, C1 (CSI is U+009B)
		return true
	case r == 0x061c, // Arabic letter mark
		r >= 0x200b && r <= 0x200f, // zero-width space/joiners, LRM, RLM
		r >= 0x2028 && r <= 0x202e, // line/paragraph separators, LRE RLE PDF LRO RLO
		r >= 0x2060 && r <= 0x206f, // word joiner, invisible operators, LRI RLI FSI PDI, deprecated formats
		r == 0xfeff,                // zero-width no-break space (BOM)
		r >= 0xfff9 && r <= 0xfffb: // interlinear annotation
		return true
	}
	return false
}
