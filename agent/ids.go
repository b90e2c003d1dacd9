package agent

import (
	"cmp"
	"fmt"
	"path/filepath"
)

// inputID is the candidate id of the input kernel (round 0).
const inputID = "input"

// candidateID names attempt a (0 = the first rewrite, k = the k-th
// refinement) of slot i of round r: r2c1, r2c1f1, ...
func candidateID(round, slot, attempt int) string {
	if attempt == 0 {
		return fmt.Sprintf("r%dc%d", round, slot)
	}
	return fmt.Sprintf("r%dc%df%d", round, slot, attempt)
}

// parseCandidateID reverses candidateID; ok is false for other ids (the
// input).
func parseCandidateID(id string) (round, slot, attempt int, ok bool) {
	if n, err := fmt.Sscanf(id, "r%dc%df%d", &round, &slot, &attempt); err == nil && n == 3 {
		return round, slot, attempt, candidateID(round, slot, attempt) == id
	}
	attempt = 0
	if n, err := fmt.Sscanf(id, "r%dc%d", &round, &slot); err == nil && n == 2 {
		return round, slot, 0, candidateID(round, slot, 0) == id
	}
	return 0, 0, 0, false
}

// compareIDs orders candidate ids by round, slot and attempt; other ids
// (the input) first.
func compareIDs(a, b string) int {
	ra, sa, fa, oka := parseCandidateID(a)
	rb, sb, fb, okb := parseCandidateID(b)
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

// candidateDir is where a candidate's artifacts live, relative to the run
// dir: round003/cand1, round003/cand1/refine2, round000/input.
func candidateDir(id string) string {
	r, s, f, ok := parseCandidateID(id)
	if !ok {
		return filepath.Join("round000", id)
	}
	d := filepath.Join(roundDir(r), fmt.Sprintf("cand%d", s))
	if f > 0 {
		d = filepath.Join(d, fmt.Sprintf("refine%d", f))
	}
	return d
}

func roundDir(r int) string { return fmt.Sprintf("round%03d", r) }
