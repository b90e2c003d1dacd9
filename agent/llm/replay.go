package llm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Replayer serves the exchanges of a --llm-record folder back, with no key
// and no network (--llm-replay). Prompts carry measured times, which differ
// from run to run, so matching the exact request (Replayer's rule) would
// miss on every replay that runs kernels. Replay matches in three steps:
//
//  1. the exact request (same fingerprint, whatever model recorded it);
//  2. the same purpose and the same messages once every number is masked
//     (times, percentages, speedups);
//  3. unless Strict, the recorded exchange of the same purpose most like the
//     request: the most identical code blocks (the kernel and the problem),
//     then the most words in common, preferring exchanges not served yet.
//
// With Match set to MatchPurpose the prompts are ignored: each purpose's
// exchanges are served in recorded order. That replays hand-written
// transcripts whose requests hold no real prompt. Exchanges are ordered by
// an optional "seq" field of the file, then by their repeat number and file
// name; ties of step 3 go to the earliest.
//
// Repeats of a request get its recorded replies in order. A purpose with no
// recorded exchange is an *ReplayMissError. Safe for concurrent use.
type Replayer struct {
	// Match selects the matching rule ("" = MatchExact).
	Match string

	dir string
	all []Exchange
	log *slog.Logger

	mu      sync.Mutex
	served  []int
	inexact int
}

// Replay matching rules.
const (
	MatchExact   = "exact"   // the exact request only (the default)
	MatchStrict  = "strict"  // exact, then numbers masked
	MatchSimilar = "similar" // exact, then numbers masked, then the most similar
	MatchPurpose = "purpose" // each purpose's exchanges in recorded order
)

// MatchRules lists the accepted Match values.
var MatchRules = []string{MatchExact, MatchStrict, MatchSimilar, MatchPurpose}

// NewReplayer loads every exchange file of dir, in recorded order (the
// exchanges' Seq, then their repeat number and file name).
func NewReplayer(dir string) (*Replayer, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("new replayer: %w", err)
	}
	all, err := loadExchanges(dir)
	if err != nil {
		return nil, fmt.Errorf("new replayer: %w", err)
	}
	slices.SortStableFunc(all, func(a, b Exchange) int {
		if a.Seq != b.Seq {
			return a.Seq - b.Seq
		}
		return a.N - b.N
	})
	return &Replayer{dir: dir, all: all, served: make([]int, len(all)), log: slog.New(slog.DiscardHandler)}, nil
}

// SetLogger sends notes about inexact matches to log.
func (r *Replayer) SetLogger(log *slog.Logger) {
	if log != nil {
		r.log = log
	}
}

// Len is the number of exchanges loaded.
func (r *Replayer) Len() int { return len(r.all) }

// Inexact counts the requests served by steps 2 and 3.
func (r *Replayer) Inexact() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.inexact
}

var reNumber = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?`)

func masked(ms []Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(string(m.Role))
		b.WriteByte(0)
		b.WriteString(reNumber.ReplaceAllString(m.Content, "#"))
		b.WriteByte(0)
	}
	return b.String()
}

// Complete returns the recorded response that matches req.
func (r *Replayer) Complete(ctx context.Context, req Request) (Response, error) {
	if err := ctx.Err(); err != nil {
		return Response{}, fmt.Errorf("replay llm %s call: %w", req.Purpose, context.Cause(ctx))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	step, i := r.match(req)
	if i < 0 {
		return Response{}, &ReplayMissError{Dir: r.dir, Fingerprint: Fingerprint(req), Purpose: req.Purpose, Model: req.Model,
			Nearest: r.nearest(req)}
	}
	r.served[i]++
	if step > 1 {
		r.inexact++
		r.log.Info("llm replay: served the closest recorded exchange", "purpose", req.Purpose, "step", step,
			"record", fmt.Sprintf("%s-%.16s-%03d.json", r.all[i].Request.Purpose, r.all[i].Fingerprint, r.all[i].N))
	}
	resp := r.all[i].Response
	resp.Fingerprint = r.all[i].Fingerprint
	return resp, nil
}

// match picks the exchange for req and says by which step (-1: none).
func (r *Replayer) match(req Request) (step, index int) {
	if r.Match == MatchPurpose {
		var all []int
		for i, e := range r.all {
			if e.Request.Purpose == req.Purpose {
				all = append(all, i)
			}
		}
		return 3, r.inOrder(all)
	}
	var exact, same []int
	rule := r.Match
	if rule == "" {
		rule = MatchExact
	}
	want := masked(req.Messages)
	fps := map[string]string{}
	for i, e := range r.all {
		if e.Request.Purpose != req.Purpose {
			continue
		}
		fp, ok := fps[e.Request.Model]
		if !ok {
			q := req
			q.Model = e.Request.Model
			fp = Fingerprint(q)
			fps[e.Request.Model] = fp
		}
		switch {
		case fp == e.Fingerprint:
			exact = append(exact, i)
		case masked(e.Request.Messages) == want:
			same = append(same, i)
		}
	}
	if i := r.inOrder(exact); i >= 0 {
		return 1, i
	}
	if rule == MatchExact {
		return -1, -1
	}
	if i := r.inOrder(same); i >= 0 {
		return 2, i
	}
	if rule == MatchStrict {
		return -1, -1
	}
	best, bestScore := -1, -1.0
	reqBlocks := codeBlocks(req.Messages)
	reqWords := words(want)
	for i, e := range r.all {
		if e.Request.Purpose != req.Purpose {
			continue
		}
		score := 0.0
		recBlocks := codeBlocks(e.Request.Messages)
		for _, b := range reqBlocks {
			if slices.Contains(recBlocks, b) {
				score += 1000
			}
		}
		score += 100 * jaccard(reqWords, words(masked(e.Request.Messages)))
		if r.served[i] == 0 {
			score += 10000
		}
		// Ties go to the earliest unserved exchange, or once all are served
		// to the last one (as repeats of one request do).
		if score > bestScore || score == bestScore && r.served[i] > 0 {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return -1, -1
	}
	return 3, best
}

// inOrder is the first candidate not served yet, else the last one.
func (r *Replayer) inOrder(cands []int) int {
	for _, i := range cands {
		if r.served[i] == 0 {
			return i
		}
	}
	if len(cands) > 0 {
		return cands[len(cands)-1]
	}
	return -1
}

var reCodeBlock = regexp.MustCompile("(?s)```python\n(.*?)\n```")

func codeBlocks(ms []Message) []string {
	var out []string
	for _, m := range ms {
		for _, sm := range reCodeBlock.FindAllStringSubmatch(m.Content, -1) {
			out = append(out, strings.TrimSpace(sm[1]))
		}
	}
	return out
}

func words(s string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.Fields(s) {
		out[w] = true
	}
	return out
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Interface guards
var _ Client = (*Replayer)(nil)
