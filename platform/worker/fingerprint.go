package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// fingerprintTimeout bounds the fingerprint op: one call of the candidate
// in a fresh runner, no kernel run, and a compile to Triton IR per launch.
const fingerprintTimeout = 60 * time.Second

type fingerprintRequest struct {
	ProblemID     string `json:"problem_id"`
	CandidatePath string `json:"candidate_path"`
	RequireTriton bool   `json:"require_triton"`
}

// Fingerprint asks a worker for the candidate's code fingerprint (the
// fingerprint op): from the Triton IR of its launches, recorded in its
// runner without running them, or from its source.
func (e *Engine) Fingerprint(ctx context.Context, c platform.Candidate) (platform.Fingerprint, error) {
	var f platform.Fingerprint
	err := e.with(ctx, func(l *Lease, pid string) error {
		req := fingerprintRequest{ProblemID: pid, CandidatePath: c.Path, RequireTriton: e.opts.RequireTriton}
		return l.Call(ctx, "fingerprint", req, &f, fingerprintTimeout)
	})
	if err != nil {
		return platform.Fingerprint{}, fmt.Errorf("fingerprint %s: %w", c.ID, err)
	}
	return f, nil
}

// Interface guards
var _ platform.Fingerprinter = (*Session)(nil)
