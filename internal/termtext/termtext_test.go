package termtext

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestClean(t *testing.T) {
	cases := []struct{ in, clean, line string }{
		{"plain text, ünïcode ✓", "plain text, ünïcode ✓", "plain text, ünïcode ✓"},
		{"two\nlines\tand a tab", "two\nlines\tand a tab", "two lines and a tab"},
		{"mismatch\x1b[2K\rPASSED", `mismatch\x1b[2K\rPASSED`, `mismatch\x1b[2K\rPASSED`},
		{"\x1b]0;pwned\x07title", `\x1b]0;pwned\x07title`, `\x1b]0;pwned\x07title`},
		{"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", `\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\`, `\x1b]8;;http://x\x1b\link\x1b]8;;\x1b\`},
		{"FAIL\bPASS\x7f", `FAIL\x08PASS\x7f`, `FAIL\x08PASS\x7f`},
		{"c1 csi \u009b2K and nel \u0085", `c1 csi \u009b2K and nel \u0085`, `c1 csi \u009b2K and nel \u0085`},
		{"abc\u202edecaf", `abc\u202edecaf`, `abc\u202edecaf`},
		{"\u2066iso\u2069 \u200fmark \ufeffbom", `\u2066iso\u2069 \u200fmark \ufeffbom`, `\u2066iso\u2069 \u200fmark \ufeffbom`},
		{"nul\x00 bad\xff utf8", `nul\x00 bad\xff utf8`, `nul\x00 bad\xff utf8`},
		{"crlf\r\n", "crlf\\r\n", `crlf\r `},
	}
	for _, tc := range cases {
		if got := Clean(tc.in); got != tc.clean {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.clean)
		}
		if got := Line(tc.in); got != tc.line {
			t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
		}
	}
}

// TestCleanLeavesNothingActive: whatever the input, the output holds no
// byte a terminal acts on (ESC, CR, BS, other C0 and C1 controls) and no
// bidi override, and cleaning twice changes nothing more.
func TestCleanLeavesNothingActive(t *testing.T) {
	var all strings.Builder
	for r := rune(0); r < 0x3000; r++ {
		all.WriteRune(r)
	}
	all.WriteString("\xff\xfe\xc0\x80\ufeff\ufff9")
	for _, f := range []func(string) string{Clean, Line} {
		out := f(all.String())
		for _, r := range out {
			if r != '\n' && r != '\t' && unsafeRune(r) || r == 0xfffd {
				t.Errorf("output holds %U", r)
			}
		}
		if f(out) != out {
			t.Error("cleaning is not idempotent")
		}
	}
}

func BenchmarkCleanSafe(b *testing.B) {
	s := strings.Repeat("an ordinary reason, with no control characters. ", 20)
	for b.Loop() {
		_ = Clean(s)
	}
}

// TestWriter: text written in pieces, characters split between writes
// included, comes out as Clean makes it whole; cleaned JSON decodes to the
// same values.
func TestWriter(t *testing.T) {
	in := "ok ✓ \x1b[2K\rPASSED \u202e末\n\tnext\u0085"
	for split := 0; split <= len(in); split++ {
		var b bytes.Buffer
		w := NewWriter(&b)
		for _, part := range []string{in[:split], in[split:]} {
			if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
				t.Fatalf("Write = %d, %v", n, err)
			}
		}
		if b.String() != Clean(in) {
			t.Fatalf("split at %d: %q, want %q", split, b.String(), Clean(in))
		}
	}
	js, _ := json.Marshal(map[string]string{"reason": in})
	var b bytes.Buffer
	_, _ = NewWriter(&b).Write(js)
	var back map[string]string
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || back["reason"] != in {
		t.Errorf("cleaned JSON %s: %v, %q", b.String(), err, back["reason"])
	}
}
