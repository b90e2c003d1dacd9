package agent

import (
	"fmt"
	"path/filepath"

	"github.com/kagent-kernels/kagent/agent/store"
)

// CandidateDir is where a candidate's artifacts live, relative to the run
// dir: round003/cand1, round003/cand1/refine2, round000/input. Readers of a
// run dir (kagent ui) find a candidate's files through it.
func CandidateDir(id string) string { return candidateDir(id) }

func candidateDir(id string) string {
	r, s, f, ok := store.ParseCandidateID(id)
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
