// Package suggest finds the valid name a mistyped one was probably meant to
// be, for "did you mean" hints: an unknown command, flag, config key or
// config name.
package suggest

import "strings"

// Closest returns the name among candidates that typed is closest to, or ""
// when none is close enough to be a likely typo. Names are compared without
// regard to case by optimal string alignment distance (insertions, deletions,
// substitutions and swaps of two adjacent characters each count one). A name
// is close when its distance is at most 1 for typed names of 3 to 5
// characters and at most 2 for longer ones; typed names shorter than 3
// characters match only their own spelling in another case. A typed
// name that begins exactly one candidate (3 characters or more) also matches
// it. Two names equally close make it a guess, and nothing is returned.
func Closest(typed string, candidates []string) string {
	t := strings.ToLower(typed)
	limit := 2
	switch n := len([]rune(t)); {
	case n < 3:
		limit = 0
	case n <= 5:
		limit = 1
	}
	best, bestDist, tied := "", limit+1, false
	var prefixed []string
	for _, c := range candidates {
		lc := strings.ToLower(c)
		switch d := Distance(t, lc); {
		case d < bestDist:
			best, bestDist, tied = c, d, false
		case d == bestDist && best != "" && c != best:
			tied = true
		}
		if len(t) >= 3 && strings.HasPrefix(lc, t) {
			prefixed = append(prefixed, c)
		}
	}
	if tied {
		return ""
	}
	if best != "" {
		return best
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}

// Distance is the optimal string alignment distance between a and b: the
// fewest insertions, deletions, substitutions and swaps of two adjacent
// characters that turn a into b, no character being edited twice.
func Distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	// Three rows of the dynamic programme: i-2, i-1 and i.
	prev2 := make([]int, len(t)+1)
	prev := make([]int, len(t)+1)
	cur := make([]int, len(t)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(s); i++ {
		cur[0] = i
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(t)]
}
