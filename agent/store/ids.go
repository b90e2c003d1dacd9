package store

import (
	"cmp"
	"fmt"
)

// InputID is the candidate id of the input kernel (round 0).
const InputID = "input"

// CandidateID names attempt a (0 = the first rewrite, k = the k-th
// refinement) of slot i of round r: r2c1, r2c1f1, ...
func CandidateID(round, slot, attempt int) string {
	if attempt == 0 {
		return fmt.Sprintf("r%dc%d", round, slot)
	}
	return fmt.Sprintf("r%dc%df%d", round, slot, attempt)
}

// ParseCandidateID reverses CandidateID; ok is false for other ids (the
// input).
func ParseCandidateID(id string) (round, slot, attempt int, ok bool) {
	if n, err := fmt.Sscanf(id, "r%dc%df%d", &round, &slot, &attempt); err == nil && n == 3 {
		return round, slot, attempt, CandidateID(round, slot, attempt) == id
	}
	attempt = 0
	if n, err := fmt.Sscanf(id, "r%dc%d", &round, &slot); err == nil && n == 2 {
		return round, slot, 0, CandidateID(round, slot, 0) == id
	}
	return 0, 0, 0, false
}

// CompareIDs orders candidate ids by round, slot and attempt; other ids
// (the input) first.
func CompareIDs(a, b string) int {
	ra, sa, fa, oka := ParseCandidateID(a)
	rb, sb, fb, okb := ParseCandidateID(b)
	switch {
	case !oka && !okb:
		return cmp.Compare(a, b)
	case !oka:
		return -1
	case !okb:
		return 1
	}
	if c := cmp.Compare(ra, rb); c != 0 {
		return c
	}
	if c := cmp.Compare(sa, sb); c != 0 {
		return c
	}
	return cmp.Compare(fa, fb)
}
