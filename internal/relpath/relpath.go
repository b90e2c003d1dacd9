// Package relpath keeps absolute paths out of what kagent writes for people
// to read and share (reports, results files): a path becomes relative to
// the folder the file describes, or its base name.
package relpath

import (
	"cmp"
	"path/filepath"
	"slices"
	"strings"
)

// Rel is target relative to base (both cleaned first). When no relative
// path exists (a relative and an absolute path, other volumes), it is
// target's base name.
func Rel(base, target string) string {
	if target == "" {
		return ""
	}
	if filepath.IsAbs(base) == filepath.IsAbs(target) {
		if r, err := filepath.Rel(base, target); err == nil {
			return r
		}
	}
	return filepath.Base(target)
}

// Root is an absolute folder that Text rewrites, and what it writes for it.
type Root struct {
	Dir string
	// As replaces Dir: "" writes the paths under Dir relative to it
	// ("/run/round001/k.py" becomes "round001/k.py", "/run" alone ".").
	As string
}

// Text rewrites, in free text (an error message, a reason), every path
// that starts with a root's folder. A folder counts only as a whole path:
// "/tmp/run" is not rewritten inside "/tmp/run2" or "/x/tmp/run". Roots
// nested in others are tried first, so the most specific one applies.
// Relative or empty folders are ignored.
func Text(s string, roots ...Root) string {
	var rs []Root
	for _, r := range roots {
		if filepath.IsAbs(r.Dir) {
			r.Dir = filepath.Clean(r.Dir)
			rs = append(rs, r)
		}
	}
	slices.SortStableFunc(rs, func(a, b Root) int { return cmp.Compare(len(b.Dir), len(a.Dir)) })
	for _, r := range rs {
		s = rewrite(s, r)
	}
	return s
}

// rewrite replaces r.Dir where it stands as a whole path in s.
func rewrite(s string, r Root) string {
	var b strings.Builder
	for {
		i := strings.Index(s, r.Dir)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(r.Dir)
		before, after := byte(' '), byte(' ')
		if i > 0 {
			before = s[i-1]
		}
		if end < len(s) {
			after = s[end]
		}
		if after == '.' && (end+1 == len(s) || !pathByte(s[end+1])) {
			after = ' ' // a full stop, not part of the name
		}
		if r.Dir == "/" || pathByte(before) || before == '/' || (pathByte(after) && after != '/') {
			b.WriteString(s[:end])
			s = s[end:]
			continue
		}
		b.WriteString(s[:i])
		s = s[end:]
		switch {
		case after == '/' && r.As == "":
			s = s[1:] // "dir/x" -> "x"
		case r.As == "":
			b.WriteString(".")
		default:
			b.WriteString(r.As)
		}
	}
}

// pathByte reports whether c can be part of a file name kagent writes or
// reads (letters, digits, "._-+~@", and "/").
func pathByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("._-+~@/", c) >= 0
}
