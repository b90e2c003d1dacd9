package ui

import (
	"fmt"
	"strings"
)

// diffLine is one line of a unified diff: Op is ' ' (context), '-', '+' or
// '@' (a hunk header).
type diffLine struct {
	Op   byte
	Text string
}

// Class is the line's CSS class.
func (l diffLine) Class() string {
	switch l.Op {
	case '+':
		return "add"
	case '-':
		return "del"
	case '@':
		return "hunk"
	}
	return "ctx"
}

// String is the line as a unified diff writes it.
func (l diffLine) String() string { return string(l.Op) + l.Text }

// maxDiffCells bounds the line-by-line table of the diff (lines of a times
// lines of b); larger inputs are shown as a whole replacement.
const maxDiffCells = 16 << 20

// unifiedDiff is the unified diff from a to b with context lines of
// context around each change; nil when they are equal.
func unifiedDiff(a, b string, context int) []diffLine {
	x, y := splitLines(a), splitLines(b)
	ops := editScript(x, y)
	// Group the edit script into hunks.
	var out []diffLine
	i := 0
	for i < len(ops) {
		if ops[i].op == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for end < len(ops) {
			if ops[end].op != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].op == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, len(ops))
				break
			}
			end = run
		}
		ai, bi := ops[start].ai, ops[start].bi
		var na, nb int
		for _, o := range ops[start:end] {
			if o.op != '+' {
				na++
			}
			if o.op != '-' {
				nb++
			}
		}
		out = append(out, diffLine{Op: '@', Text: fmt.Sprintf("@ -%s +%s @@", hunkRange(ai, na), hunkRange(bi, nb))})
		for _, o := range ops[start:end] {
			out = append(out, diffLine{Op: o.op, Text: o.text})
		}
		i = end
	}
	return out
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// edit is one step of an edit script: a line kept, deleted from a or added
// from b; ai and bi are the 0-based line positions before the step.
type edit struct {
	op     byte
	text   string
	ai, bi int
}

// editScript is a shortest edit script from x to y by longest common
// subsequence (inputs beyond maxDiffCells: delete all, add all).
func editScript(x, y []string) []edit {
	// Common prefix and suffix need no table.
	p := 0
	for p < len(x) && p < len(y) && x[p] == y[p] {
		p++
	}
	sfx := 0
	for sfx < len(x)-p && sfx < len(y)-p && x[len(x)-1-sfx] == y[len(y)-1-sfx] {
		sfx++
	}
	mx, my := x[p:len(x)-sfx], y[p:len(y)-sfx]
	var ops []edit
	for k := 0; k < p; k++ {
		ops = append(ops, edit{' ', x[k], k, k})
	}
	n, m := len(mx), len(my)
	if n*m > maxDiffCells {
		for k, l := range mx {
			ops = append(ops, edit{'-', l, p + k, p})
		}
		for k, l := range my {
			ops = append(ops, edit{'+', l, p + n, p + k})
		}
	} else {
		// lcs[i][j]: length of the LCS of mx[i:] and my[j:].
		lcs := make([][]int32, n+1)
		for i := range lcs {
			lcs[i] = make([]int32, m+1)
		}
		for i := n - 1; i >= 0; i-- {
			for j := m - 1; j >= 0; j-- {
				if mx[i] == my[j] {
					lcs[i][j] = lcs[i+1][j+1] + 1
				} else {
					lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
				}
			}
		}
		i, j := 0, 0
		for i < n || j < m {
			switch {
			case i < n && j < m && mx[i] == my[j]:
				ops = append(ops, edit{' ', mx[i], p + i, p + j})
				i++
				j++
			case i < n && (j == m || lcs[i+1][j] >= lcs[i][j+1]):
				ops = append(ops, edit{'-', mx[i], p + i, p + j})
				i++
			default:
				ops = append(ops, edit{'+', my[j], p + i, p + j})
				j++
			}
		}
	}
	for k := 0; k < sfx; k++ {
		ai, bi := len(x)-sfx+k, len(y)-sfx+k
		ops = append(ops, edit{' ', x[ai], ai, bi})
	}
	return ops
}

// splitLines splits s into lines without their newlines ("" has none).
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
