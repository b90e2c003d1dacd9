package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
)

// block is one fenced block of a reply.
type block struct {
	lang     string
	body     string
	complete bool // closed by a fence (not cut off at the end of the reply)
}

// fencedBlocks splits text into its ``` or ~~~ fenced blocks. An opening fence
// may be indented up to three spaces and carry an info string; the block ends
// at a line holding only a fence of the same character at least as long, or
// at the end of the text (then it is not complete).
func fencedBlocks(text string) []block {
	lines := strings.SplitAfter(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		ch, n, info, ok := fence(lines[i])
		if !ok {
			continue
		}
		lang := strings.ToLower(strings.Fields(info + " x")[0])
		if info == "" {
			lang = ""
		}
		var body strings.Builder
		b := block{lang: lang}
		for i++; i < len(lines); i++ {
			if c2, n2, info2, ok := fence(lines[i]); ok && c2 == ch && n2 >= n && info2 == "" {
				b.complete = true
				break
			}
			body.WriteString(lines[i])
		}
		b.body = body.String()
		out = append(out, b)
	}
	return out
}

// fence parses a fence line: its character, length and info string.
func fence(line string) (ch byte, n int, info string, ok bool) {
	l := strings.TrimRight(line, "\n")
	trimmed := strings.TrimLeft(l, " ")
	if len(l)-len(trimmed) > 3 || len(trimmed) < 3 {
		return 0, 0, "", false
	}
	ch = trimmed[0]
	if ch != '`' && ch != '~' {
		return 0, 0, "", false
	}
	for n < len(trimmed) && trimmed[n] == ch {
		n++
	}
	if n < 3 {
		return 0, 0, "", false
	}
	info = strings.TrimSpace(trimmed[n:])
	if ch == '`' && strings.Contains(info, "`") {
		return 0, 0, "", false
	}
	return ch, n, info, true
}

var pythonLangs = map[string]bool{"": true, "python": true, "py": true, "python3": true, "py3": true, "triton": true}

var (
	reEntry     = regexp.MustCompile(`(?m)^\s*(def\s+kernel_function\s*\(|class\s+ModelNew\b)`)
	reTritonJit = regexp.MustCompile(`(?m)^\s*@triton\.jit\b`)
	rePythonish = regexp.MustCompile(`(?m)^\s*(import \w|from \w[\w.]* import |def \w+\s*\(|class \w+|@\w)`)
)

// pythonScore ranks a block: an entry point (kernel_function or ModelNew)
// counts most, then a @triton.jit kernel.
func pythonScore(code string) int {
	s := 0
	if reEntry.MatchString(code) {
		s += 2
	}
	if reTritonJit.MatchString(code) {
		s++
	}
	return s
}

// ExtractPython returns the Python code of a model's reply. Of the fenced
// blocks tagged python (or untagged), it prefers the one that defines
// kernel_function/ModelNew and a @triton.jit kernel, then a closed block over
// one cut off at the end of the reply, then the later block. A reply without
// fences that is itself Python is returned whole. The code ends with one
// newline. ErrNoCode when there is none.
func ExtractPython(reply string) (string, error) {
	blocks := fencedBlocks(reply)
	best, bestKey := -1, [3]int{-1, -1, -1}
	var langs []string
	for i, b := range blocks {
		langs = append(langs, cmpOr(b.lang, "untagged"))
		if !pythonLangs[b.lang] || strings.TrimSpace(b.body) == "" {
			continue
		}
		if b.lang == "" && !rePythonish.MatchString(b.body) {
			continue // an untagged block of prose, output or shell
		}
		complete := 0
		if b.complete {
			complete = 1
		}
		key := [3]int{pythonScore(b.body), complete, i}
		if key[0] > bestKey[0] || key[0] == bestKey[0] && (key[1] > bestKey[1] || key[1] == bestKey[1] && key[2] > bestKey[2]) {
			best, bestKey = i, key
		}
	}
	if best >= 0 {
		return strings.TrimRight(blocks[best].body, " \t\n") + "\n", nil
	}
	if len(blocks) == 0 {
		t := strings.TrimSpace(strings.ReplaceAll(reply, "\r\n", "\n"))
		if pythonScore(t) > 0 && rePythonish.MatchString(t) {
			return t + "\n", nil
		}
		return "", fmt.Errorf("extract python: %w: the reply (%d bytes) has no fenced ```python block", ErrNoCode, len(reply))
	}
	return "", fmt.Errorf("extract python: %w: the reply's %d fenced blocks (%s) hold no python", ErrNoCode, len(blocks), strings.Join(langs, ", "))
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ExtractJSON decodes the first JSON value of a reply into v: from a fenced
// json (or untagged) block if there is one, else from the bare text, skipping
// prose before and after. It looks for an object, or an array when v points
// to a slice. A value that does not decode is skipped for the next one; as a
// last resort trailing commas are dropped. ErrNoJSON when none is found.
func ExtractJSON(reply string, v any) error {
	open := byte('{')
	if t := reflect.TypeOf(v); t != nil && t.Kind() == reflect.Pointer {
		if k := t.Elem().Kind(); k == reflect.Slice || k == reflect.Array {
			open = '['
		}
	}
	var texts []string
	for _, b := range fencedBlocks(reply) {
		if b.lang == "json" || b.lang == "" || b.lang == "jsonc" {
			texts = append(texts, b.body)
		}
	}
	texts = append(texts, reply)
	var firstErr error
	found := false
	for _, fix := range []bool{false, true} {
		for _, t := range texts {
			for _, cand := range balanced(t, open) {
				found = true
				if fix {
					cand = dropTrailingCommas(cand)
				}
				err := json.Unmarshal([]byte(cand), v)
				if err == nil {
					return nil
				}
				if firstErr == nil {
					firstErr = err
				}
			}
		}
	}
	kind := "object"
	if open == '[' {
		kind = "array"
	}
	if !found {
		return fmt.Errorf("extract json: %w: the reply (%d bytes) has no balanced json %s", ErrNoJSON, len(reply), kind)
	}
	var te *json.UnmarshalTypeError
	if errors.As(firstErr, &te) {
		return fmt.Errorf("extract json: the reply's json %s does not fit %T: field %q wants %s, got %s: %w",
			kind, v, te.Field, te.Type, te.Value, firstErr)
	}
	return fmt.Errorf("extract json: %w: no json %s in the reply decodes: %w", ErrNoJSON, kind, firstErr)
}

// balanced returns, in order, every balanced {...} (or [...]) span of text
// that starts outside a JSON string. Unbalanced openings are skipped.
func balanced(text string, open byte) []string {
	closeCh := byte('}')
	if open == '[' {
		closeCh = ']'
	}
	var out []string
	for start := 0; start < len(text); start++ {
		if text[start] != open {
			continue
		}
		depth, inStr, esc := 0, false, false
		end := -1
	scan:
		for i := start; i < len(text); i++ {
			c := text[i]
			switch {
			case inStr && esc:
				esc = false
			case inStr && c == '\\':
				esc = true
			case inStr && c == '"':
				inStr = false
			case inStr:
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					if c == closeCh {
						end = i
					}
					break scan
				}
			}
		}
		if end > 0 {
			out = append(out, text[start:end+1])
			start = end
		}
	}
	return out
}

// dropTrailingCommas removes commas directly before } or ] outside strings.
func dropTrailingCommas(s string) string {
	var b strings.Builder
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr && c == '"':
			inStr = false
		case !inStr && c == '"':
			inStr = true
		case !inStr && c == ',':
			j := i + 1
			for j < len(s) && strings.IndexByte(" \t\r\n", s[j]) >= 0 {
				j++
			}
			if j < len(s) && (s[j] == '}' || s[j] == ']') {
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}
