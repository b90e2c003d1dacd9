package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// fingerprintTimeout bounds the fingerprint op: it parses one file.
const fingerprintTimeout = 30 * time.Second

type fingerprintRequest struct {
	CandidatePath string `json:"candidate_path"`
}

// Fingerprint asks a worker for the candidate's code fingerprint (the
// fingerprint op); the candidate is not imported or run.
func (e *Engine) Fingerprint(ctx context.Context, c platform.Candidate) (platform.Fingerprint, error) {
	var f platform.Fingerprint
	err := e.with(ctx, func(l *Lease, _ string) error {
		return l.Call(ctx, "fingerprint", fingerprintRequest{CandidatePath: c.Path}, &f, fingerprintTimeout)
	})
	if err != nil {
		return platform.Fingerprint{}, fmt.Errorf("fingerprint %s: %w", c.ID, err)
	}
	return f, nil
}

// Interface guards
var _ platform.Fingerprinter = (*Session)(nil)
