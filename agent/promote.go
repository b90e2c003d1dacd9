package agent

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/configs"
	"github.com/kagent-kernels/kagent/platform"
)

// Decision is the promotion rule's verdict on a candidate timed against the
// best (DESIGN §4): promote only when faster by more than MinPct and by
// more than NoiseFactor times the larger coefficient of variation.
type Decision struct {
	Candidate string  `json:"candidate"`
	Best      string  `json:"best"`
	Promoted  bool    `json:"promoted"`
	BestMS    float64 `json:"best_ms"`
	CandMS    float64 `json:"candidate_ms"`
	// ImprovementPct is how much faster the candidate ran (negative: slower).
	ImprovementPct float64 `json:"improvement_pct"`
	// ThresholdPct is what it had to beat: max(MinPct, NoiseFactor x CV).
	ThresholdPct float64 `json:"threshold_pct"`
	// NoiseCV is the coefficient of variation the threshold used: the larger
	// of the two timings' (see noiseCV).
	NoiseCV float64 `json:"noise_cv"`
	// Paired: the improvement and the noise come from the ratios of the
	// interleaved pairs of calls (median and robust spread), not from the
	// two medians.
	Paired bool `json:"paired,omitempty"`
	// Interleaved is true when both were timed A B A B in one request.
	Interleaved bool `json:"interleaved"`
	// Wins is how many interleaved pairs the candidate won, of Pairs, and
	// SignP the one-sided sign-test probability of winning that many by
	// chance.
	Wins   int     `json:"wins,omitempty"`
	Pairs  int     `json:"pairs,omitempty"`
	SignP  float64 `json:"sign_p,omitempty"`
	Reason string  `json:"reason"`
}

// noiseCV is a timing's coefficient of variation, estimated robustly from
// its 20th and 80th percentiles (for normal noise they lie 0.8416 standard
// deviations either side of the median): a single preempted sample inflates
// the plain stddev/mean CV enough to make any promotion impossible, while
// the percentiles ignore it. Without percentiles it is the plain CV.
func noiseCV(t platform.Timing) float64 {
	if t.MedianMS > 0 && t.P20MS > 0 && t.P80MS >= t.P20MS {
		return (t.P80MS - t.P20MS) / (2 * 0.8416) / t.MedianMS
	}
	return t.CV
}

// pairedRatio is the median of candidate/best over the calls of an
// interleaved comparison, with its robust coefficient of variation. ok is
// false unless both timings hold the same number (5 or more) of calls.
func pairedRatio(best, cand platform.Timing) (ratio, cv float64, ok bool) {
	n := len(best.TimesMS)
	if n < 5 || len(cand.TimesMS) != n {
		return 0, 0, false
	}
	rs := make([]float64, 0, n)
	for i := range n {
		if best.TimesMS[i] <= 0 || cand.TimesMS[i] <= 0 {
			return 0, 0, false
		}
		rs = append(rs, cand.TimesMS[i]/best.TimesMS[i])
	}
	slices.Sort(rs)
	med, p20, p80 := quantile(rs, 0.5), quantile(rs, 0.2), quantile(rs, 0.8)
	return med, (p80 - p20) / (2 * 0.8416) / med, true
}

// pairWins counts the interleaved pairs in which the candidate ran faster.
func pairWins(best, cand platform.Timing) (wins, pairs int) {
	if len(best.TimesMS) != len(cand.TimesMS) {
		return 0, 0
	}
	for i := range best.TimesMS {
		if cand.TimesMS[i] < best.TimesMS[i] {
			wins++
		}
	}
	return wins, len(best.TimesMS)
}

// signTestP is the probability of k or more wins in n fair coin flips: the
// one-sided sign test of "the candidate is no faster".
func signTestP(k, n int) float64 {
	if n == 0 {
		return 1
	}
	p, c := 0.0, 1.0 // c = C(n, i) / 2^n, built up from i = 0
	for range n {
		c /= 2
	}
	for i := 0; i <= n; i++ {
		if i >= k {
			p += c
		}
		c = c * float64(n-i) / float64(i+1)
	}
	return min(p, 1)
}

// signLevel is the sign-test probability below which consistent wins over
// the interleaved pairs count as beating the noise, whatever its spread.
const signLevel = 1e-3

// quantile interpolates the q-quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	lo := int(pos)
	hi := min(lo+1, len(xs)-1)
	return xs[lo] + (xs[hi]-xs[lo])*(pos-float64(lo))
}

// promotionRule holds the thresholds of the rule.
type promotionRule struct {
	MinPct      float64
	NoiseFactor float64
}

// decide applies the rule to a timing of the best and of the candidate.
func (r promotionRule) decide(best, cand platform.Timing) Decision {
	d := Decision{BestMS: best.MedianMS, CandMS: cand.MedianMS}
	if best.MedianMS <= 0 || cand.MedianMS <= 0 {
		d.Reason = "no usable time to compare"
		return d
	}
	d.ImprovementPct = (best.MedianMS - cand.MedianMS) / best.MedianMS * 100
	cv := max(noiseCV(best), noiseCV(cand))
	if ratio, spread, ok := pairedRatio(best, cand); ok {
		// Timed interleaved: each candidate call has a best call beside it,
		// so the ratio of the pair cancels the noise both saw.
		d.ImprovementPct, cv, d.Paired = (1-ratio)*100, spread, true
		d.Wins, d.Pairs = pairWins(best, cand)
		d.SignP = signTestP(d.Wins, d.Pairs)
	}
	d.NoiseCV = cv
	noise := r.NoiseFactor * cv * 100
	d.ThresholdPct = max(r.MinPct, noise)
	d.Promoted = d.ImprovementPct > d.ThresholdPct
	// Heavy-tailed noise (a shared machine, preemption) can inflate the
	// spread past any real gain; a candidate that wins nearly every
	// interleaved pair is faster all the same, if by more than MinPct.
	consistent := d.Paired && d.ImprovementPct > r.MinPct && d.SignP < signLevel
	switch {
	case d.Promoted:
		d.Reason = fmt.Sprintf("%.1f%% faster, above the %.1f%% threshold", d.ImprovementPct, d.ThresholdPct)
	case consistent:
		d.Promoted = true
		d.Reason = fmt.Sprintf("%.1f%% faster, won %d of %d interleaved pairs (sign test p=%.2g; noise threshold %.1f%%)",
			d.ImprovementPct, d.Wins, d.Pairs, d.SignP, d.ThresholdPct)
	case d.ImprovementPct <= 0:
		d.Reason = fmt.Sprintf("%.1f%% slower than the best", -d.ImprovementPct)
	case noise >= r.MinPct:
		d.Reason = fmt.Sprintf("%.1f%% faster, within the noise (%.3g x CV %.3g = %.1f%%)",
			d.ImprovementPct, r.NoiseFactor, cv, noise)
	default:
		d.Reason = fmt.Sprintf("%.1f%% faster, below min_improvement_pct %.3g%%", d.ImprovementPct, r.MinPct)
	}
	return d
}

// settledBySolo decides, from the two stored timings alone, a candidate
// whose own timing is faster than the best's by too little to clear MinPct
// even if those timings, taken apart, had drifted by the margin: half of
// MinPct, or NoiseFactor times the larger CV where that is more. Timing it
// against the best once more could not promote it, so it is not timed; ok is
// false when the interleaved comparison could change the outcome.
func (r promotionRule) settledBySolo(best, cand platform.Timing) (Decision, bool) {
	if r.MinPct <= 0 || best.MedianMS <= 0 || cand.MedianMS <= 0 {
		return Decision{}, false
	}
	imp := (best.MedianMS - cand.MedianMS) / best.MedianMS * 100
	margin := max(r.MinPct/2, r.NoiseFactor*max(noiseCV(best), noiseCV(cand))*100)
	if imp+margin >= r.MinPct {
		return Decision{}, false
	}
	d := r.decide(best, cand)
	d.Promoted = false
	d.Reason = fmt.Sprintf("%.1f%% faster by its own timing, under min_improvement_pct %.3g%% by more than the %.2g%% "+
		"two timings may drift apart (not timed against the best)", imp, r.MinPct, margin)
	return d, true
}

// promote decides, one at a time and fastest first, whether the round's
// measured candidates (and the earlier ones it timed again, retimed)
// replace the best: each one faster than the current best by its own
// timing is timed against it interleaved and promoted by the rule. A
// candidate with a screening timing is never considered: its time is not
// one a promotion may rest on. Decisions are recorded, so a resumed round
// does not take them again. It returns the number of promotions.
func (l *loop) promote(ctx context.Context, r int, retimed []string) (int, error) {
	cands, err := l.st.Candidates(ctx, l.runID, store.CandidateFilter{Statuses: []store.Status{store.StatusTimed, store.StatusProfiled}})
	if err != nil {
		return 0, err
	}
	cands = slices.DeleteFunc(cands, func(c store.Candidate) bool {
		return (c.Round != r && !slices.Contains(retimed, c.ID)) || (c.Timing != nil && c.Timing.Screening())
	})
	slices.SortFunc(cands, func(a, b store.Candidate) int {
		if c := cmp.Compare(a.MedianMS(), b.MedianMS()); c != 0 {
			return c
		}
		return store.CompareIDs(a.ID, b.ID)
	})
	decided, err := l.decisions(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range cands {
		if _, ok := decided[c.ID]; ok || c.ID == l.bestID || c.Timing == nil {
			continue
		}
		best, err := l.st.Candidate(ctx, l.runID, l.bestID)
		if err != nil {
			return n, err
		}
		var d Decision
		if best.Timing == nil || c.MedianMS() >= best.MedianMS() {
			d = promotionRule{MinPct: l.cfg.MinImprovementPct, NoiseFactor: l.cfg.NoiseFactor}.decide(derefTiming(best.Timing), *c.Timing)
			d.Best, d.Candidate, d.Promoted = best.ID, c.ID, false
		} else {
			var ta, tb platform.Timing
			d, ta, tb, err = l.compare(ctx, l.platformCandidate(best), l.platformCandidate(c), *best.Timing, *c.Timing)
			if err != nil {
				v, ok := timingFault(err)
				if !ok {
					return n, fmt.Errorf("compare %s with %s: %w", c.ID, best.ID, err)
				}
				d = Decision{Best: best.ID, Candidate: c.ID, Reason: "comparison failed: " + v.Failure + ": " + v.Reason}
				if !strings.HasPrefix(v.Reason, "a (") {
					v.Reason = "while timed against the best: " + v.Reason
					if _, err := l.st.UpdateCandidate(ctx, l.runID, c.ID, store.Update{Status: store.StatusRejected, Verdict: &v}); err != nil {
						return n, err
					}
				}
			}
			if err := l.art.writeJSON(candidateFile(c.ID, "compare.json"), map[string]any{"decision": d, "best": ta, "candidate": tb}); err != nil {
				return n, err
			}
		}
		if !d.Promoted {
			l.log.Info("not promoted", "candidate", c.ID, "best", d.Best, "reason", d.Reason)
		}
		if d.Promoted {
			if err := l.st.SetBest(ctx, l.runID, c.ID); err != nil {
				return n, err
			}
			l.bestID = c.ID
			n++
			ev := l.speedupEvent(Event{Event: EventPromoted, Round: ptr(r), Candidate: c.ID, Parent: c.ParentID,
				Direction: c.Direction, ImprovementPct: d.ImprovementPct}, c)
			l.ev.emit(ev)
		}
		data, _ := json.Marshal(d)
		if _, err := l.st.AddEvent(ctx, store.Event{RunID: l.runID, Round: r, CandidateID: c.ID, Kind: storeEventPromotion,
			Message: d.Reason, Data: data}); err != nil {
			return n, err
		}
	}
	if n > 0 && l.cfg.ProfileCandidates != configs.ProfileFinal {
		best, err := l.st.Candidate(ctx, l.runID, l.bestID)
		if err != nil {
			return n, err
		}
		_, err = l.profileSkipped(ctx, best)
		return n, err
	}
	return n, nil
}

// decisions are the promotion decisions recorded so far, by candidate.
func (l *loop) decisions(ctx context.Context) (map[string]Decision, error) {
	evs, err := l.st.Events(ctx, l.runID, 0, 0)
	if err != nil {
		return nil, err
	}
	out := map[string]Decision{}
	for _, e := range evs {
		if e.Kind != storeEventPromotion {
			continue
		}
		var d Decision
		if json.Unmarshal(e.Data, &d) == nil {
			out[d.Candidate] = d
		}
	}
	return out, nil
}

func derefTiming(t *platform.Timing) platform.Timing {
	if t == nil {
		return platform.Timing{}
	}
	return *t
}
