package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
)

// Checks of a verdict that rejects a duplicate.
const (
	// checkFingerprint precedes the duplicate check when the repeat was
	// found by compiled code rather than by normalised source; its reason
	// names the method and the hash.
	checkFingerprint = "fingerprint"
	fingerprintFile  = "fingerprint.json"
)

// fingerprints maps the code fingerprints of a run's candidates to the
// first candidate with each. It is filled from the candidates'
// fingerprint.json on first use, so a resumed run knows the earlier ones.
type fingerprints struct {
	mu     sync.Mutex
	loaded bool
	first  map[string]string // method:hash -> candidate id
}

// codeDuplicate fingerprints a candidate that is not a source duplicate
// (sessions that cannot fingerprint skip this) and returns the verdict that
// rejects it when its code repeats an earlier candidate's, nil otherwise.
// A fingerprint that cannot be computed leaves the candidate to verification.
func (p *pipeline) codeDuplicate(ctx context.Context, c store.Candidate) (*platform.Verdict, error) {
	fp, ok := p.in.Session.(platform.Fingerprinter)
	if !ok {
		return nil, nil
	}
	f, err := fp.Fingerprint(ctx, p.platformCandidate(c))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.log.Warn("fingerprint failed; the candidate is verified", "candidate", c.ID, "err", err)
		return nil, nil
	}
	if err := p.art.writeJSON(candidateFile(c.ID, fingerprintFile), f); err != nil {
		return nil, err
	}
	if f.Hash == "" {
		return nil, nil
	}
	first, err := p.fps.claim(ctx, p, f, c.ID)
	if err != nil || first == "" {
		return nil, err
	}
	reason := fmt.Sprintf("the kernel compiles to the same code as %s (%s); propose a different change", first, methodWords(f.Method))
	v := rejection(failDup, reason)
	v.Checks = append([]platform.Check{{Name: checkFingerprint, Passed: true, Reason: f.Method + " " + f.Hash}}, v.Checks...)
	return &v, nil
}

// fingerprintInput records the input kernel's fingerprint (once), so that a
// rewrite compiling to the input's code is its duplicate.
func (p *pipeline) fingerprintInput(ctx context.Context, in store.Candidate) error {
	if _, err := os.Stat(p.art.path(candidateFile(in.ID, fingerprintFile))); !errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if _, err := p.materialize(in); err != nil {
		return err
	}
	_, err := p.codeDuplicate(ctx, in)
	return err
}

// methodWords says what a fingerprint method compares.
func methodWords(method string) string {
	if method == "ttir" {
		return "same Triton IR for the launched specialisation"
	}
	return "same syntax tree once comments, docstrings, formatting and local names are set aside"
}

// claim records id as the first with f's hash, or returns the earlier
// candidate that has it.
func (fs *fingerprints) claim(ctx context.Context, p *pipeline, f platform.Fingerprint, id string) (string, error) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if !fs.loaded {
		if err := fs.load(ctx, p); err != nil {
			return "", err
		}
		fs.loaded = true
	}
	key := f.Method + ":" + f.Hash
	if first, ok := fs.first[key]; ok && first != id {
		return first, nil
	}
	fs.first[key] = id
	return "", nil
}

// load reads the fingerprints of the run's candidates recorded so far,
// earliest first, leaving out the duplicates themselves.
func (fs *fingerprints) load(ctx context.Context, p *pipeline) error {
	fs.first = map[string]string{}
	cs, err := p.st.Candidates(ctx, p.runID, store.CandidateFilter{})
	if err != nil {
		return err
	}
	slices.SortFunc(cs, func(a, b store.Candidate) int { return store.CompareIDs(a.ID, b.ID) })
	for _, c := range cs {
		if c.Verdict != nil && c.Verdict.Failure == failDup {
			continue
		}
		b, err := os.ReadFile(p.art.path(candidateFile(c.ID, fingerprintFile)))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read fingerprint of %s: %w", c.ID, err)
		}
		var f platform.Fingerprint
		if json.Unmarshal(b, &f) != nil || f.Hash == "" {
			continue
		}
		if _, ok := fs.first[f.Method+":"+f.Hash]; !ok {
			fs.first[f.Method+":"+f.Hash] = c.ID
		}
	}
	return nil
}

// DuplicateBy says how a rejected duplicate was found: "source" (its
// normalised source repeats an earlier candidate's) or "code" (its code
// fingerprint does); "" for any other verdict.
func DuplicateBy(v *platform.Verdict) string {
	if v == nil || v.Failure != failDup {
		return ""
	}
	for _, ch := range v.Checks {
		if ch.Name == checkFingerprint {
			return "code"
		}
	}
	return "source"
}
