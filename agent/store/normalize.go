package store

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unicode/utf8"
)

// SourceHash is the hex SHA-256 of NormalizeSource(src): two kernels that
// differ only in comments, docstrings, blank lines or layout hash equal.
func SourceHash(src string) string {
	sum := sha256.Sum256([]byte(NormalizeSource(src)))
	return hex.EncodeToString(sum[:])
}

// NormalizeSource reduces Python source to what matters for deduplication.
// It tokenizes the source (string literals, names and numbers, one-character
// punctuation) and then:
//
//   - drops comments, blank lines, and statements made of string literals
//     alone (docstrings; f-strings are kept, they may run code);
//   - joins the physical lines of a logical line (open brackets, backslash
//     continuations);
//   - writes each logical line as its block depth (four spaces a level,
//     whatever the original indentation width) followed by its tokens, with
//     one space between two names, numbers or strings and none elsewhere;
//   - keeps string literals verbatim (a # inside one is not a comment), except
//     that a short single-quoted string with no quote or backslash inside is
//     written with double quotes, and string prefixes are lowercased;
//   - reads CRLF and CR line ends as LF and ignores a byte-order mark.
//
// The result is for comparison only; it is not meant to be run.
func NormalizeSource(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimPrefix(src, "\uFEFF")

	var b strings.Builder
	stack := []int{0} // indentation widths of the open blocks
	for _, ln := range logicalLines(src) {
		for len(stack) > 1 && ln.indent < stack[len(stack)-1] {
			stack = stack[:len(stack)-1]
		}
		if ln.indent > stack[len(stack)-1] {
			stack = append(stack, ln.indent)
		}
		if ln.docstring() {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat("    ", len(stack)-1))
		for i, t := range ln.tokens {
			if i > 0 && t.word() && ln.tokens[i-1].word() {
				b.WriteByte(' ')
			}
			b.WriteString(t.text)
		}
	}
	return b.String()
}

type tokenKind int

const (
	tokName    tokenKind = iota // a name, keyword or number
	tokString                   // a string literal with its prefix
	tokFString                  // an f-string
	tokPunct                    // one character of punctuation
)

type token struct {
	kind tokenKind
	text string
}

func (t token) word() bool { return t.kind != tokPunct }

type logicalLine struct {
	indent int // width of the first physical line's indentation (tabs to multiples of 8)
	tokens []token
}

// docstring reports a statement made of plain string literals alone.
func (l logicalLine) docstring() bool {
	for _, t := range l.tokens {
		if t.kind != tokString {
			return false
		}
	}
	return true
}

// logicalLines splits src (LF line ends) into tokenized logical lines,
// skipping blank and comment-only lines. It never fails: an unterminated
// string ends at the end of its line (or of the source, if triple-quoted).
func logicalLines(src string) []logicalLine {
	var (
		lines     []logicalLine
		cur       logicalLine
		depth     int // open brackets
		lineStart = true
	)
	i := 0
	for i < len(src) {
		if lineStart {
			lineStart = false
			w := 0
		measure:
			for ; i < len(src); i++ {
				switch src[i] {
				case ' ':
					w++
				case '\t':
					w = w/8*8 + 8
				case '\f':
					w = 0
				default:
					break measure
				}
			}
			cur = logicalLine{indent: w}
			continue
		}
		c := src[i]
		switch {
		case c == '\n':
			i++
			if depth > 0 {
				continue
			}
			if len(cur.tokens) > 0 {
				lines = append(lines, cur)
			}
			cur = logicalLine{}
			lineStart = true
		case c == ' ' || c == '\t' || c == '\f':
			i++
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			i += 2
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'':
			end := stringEnd(src, i)
			cur.tokens = append(cur.tokens, stringToken("", src[i:end]))
			i = end
		case c < utf8.RuneSelf && !isWordByte(c):
			switch c {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				depth = max(depth-1, 0)
			}
			cur.tokens = append(cur.tokens, token{kind: tokPunct, text: src[i : i+1]})
			i++
		default:
			j := i
			for j < len(src) {
				r, size := utf8.DecodeRuneInString(src[j:])
				if r < utf8.RuneSelf && !isWordByte(byte(r)) || r >= utf8.RuneSelf && !isWordRune(r) {
					break
				}
				j += size
			}
			if j == i { // a rune that is neither a word nor ASCII punctuation
				_, size := utf8.DecodeRuneInString(src[i:])
				cur.tokens = append(cur.tokens, token{kind: tokPunct, text: src[i : i+size]})
				i += size
				continue
			}
			word := src[i:j]
			if j < len(src) && (src[j] == '"' || src[j] == '\'') && isStringPrefix(word) {
				end := stringEnd(src, j)
				cur.tokens = append(cur.tokens, stringToken(word, src[j:end]))
				i = end
				continue
			}
			cur.tokens = append(cur.tokens, token{kind: tokName, text: word})
			i = j
		}
	}
	if len(cur.tokens) > 0 {
		lines = append(lines, cur)
	}
	return lines
}

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }

// isStringPrefix reports a Python string prefix (r, b, u, f, t and their
// two-letter combinations, any case).
func isStringPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "u", "b", "f", "t", "br", "rb", "fr", "rf", "tr", "rt":
		return true
	}
	return false
}

// stringEnd returns the index just past the string literal whose opening
// quote is at src[i]. A backslash always escapes the next character (in raw
// strings too, where it cannot end the string either).
func stringEnd(src string, i int) int {
	q := src[i]
	triple := strings.HasPrefix(src[i:], strings.Repeat(string(q), 3))
	j := i + 1
	if triple {
		j = i + 3
	}
	for j < len(src) {
		switch c := src[j]; {
		case c == '\\':
			j += 2
		case triple && c == q && strings.HasPrefix(src[j:], strings.Repeat(string(q), 3)):
			return j + 3
		case !triple && c == q:
			return j + 1
		case !triple && c == '\n':
			return j // unterminated: the line ends it
		default:
			j++
		}
	}
	return len(src)
}

// stringToken builds the token of a literal with its prefix.
func stringToken(prefix, lit string) token {
	prefix = strings.ToLower(prefix)
	kind := tokString
	if strings.ContainsAny(prefix, "ft") {
		kind = tokFString
	}
	if len(lit) >= 2 && lit[0] == '\'' && lit[len(lit)-1] == '\'' && !strings.HasPrefix(lit, "'''") {
		if body := lit[1 : len(lit)-1]; !strings.ContainsAny(body, "\"\\") {
			lit = `"` + body + `"`
		}
	}
	return token{kind: kind, text: prefix + lit}
}
