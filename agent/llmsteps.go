package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/kagent-kernels/kagent/agent/llm"
	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/prompts"
	"github.com/kagent-kernels/kagent/roofline"
	"github.com/kagent-kernels/kagent/search"
)

// historyInPrompts is how many earlier attempts and reflections a prompt
// shows.
const historyInPrompts = 10

// diagnoseAll diagnoses each parent of the round's LLM slots once, asking
// for as many ranked, distinct bottlenecks as the parent has slots, and
// shares the answer among them. Parents whose slots all have candidates
// already (a resumed round) are diagnosed only if a reflection needs it,
// from the saved reply. A diagnosis that fails leaves its slots empty.
func (pr *proposer) diagnoseAll(ctx context.Context, v view, slots []search.Slot, chains map[int][]store.Candidate) (map[string][]prompts.Bottleneck, error) {
	count := map[string]int{}
	first := map[string]int{}
	need := map[string]bool{}
	var order []string
	for _, s := range slots {
		if s.Variant != nil || s.Retime != "" {
			continue
		}
		if _, seen := count[s.Parent()]; !seen {
			order = append(order, s.Parent())
			first[s.Parent()] = s.Index
		}
		count[s.Parent()]++
		if len(chains[s.Index]) == 0 {
			need[s.Parent()] = true
		}
	}
	out := map[string][]prompts.Bottleneck{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	var fatal error
	for _, p := range order {
		if !need[p] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			bs, err := pr.diagnose(ctx, v, p, first[p], count[p])
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if fatal == nil {
					fatal = err
				}
				return
			}
			out[p] = bs
		}()
	}
	wg.Wait()
	return out, fatal
}

// diagnose asks for n ranked bottlenecks of one parent. Its prompt and reply
// go to the folder of the parent's first slot of the round.
func (pr *proposer) diagnose(ctx context.Context, v view, parentID string, firstSlot, n int) ([]prompts.Bottleneck, error) {
	parent, ok := v.h.ByID[parentID]
	if !ok {
		return nil, &fatalError{fmt.Errorf("diagnose: parent %s is not recorded", parentID)}
	}
	// A parent the profiling policy skipped (a beam member slower than the
	// best) is profiled now, so that its diagnosis sees real metrics.
	if p, err := pr.profileSkipped(ctx, parent); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		pr.log.Warn("profiling the parent failed; diagnosing it on the synthetic roofline", "parent", parentID, "err", err)
	} else {
		parent = p
	}
	var metrics []prompts.Metric
	if parent.Metrics != nil {
		metrics = prompts.MetricsFromRaw(parent.Metrics.Raw)
	}
	p, err := pr.in.Prompts.Diagnose(prompts.DiagnoseData{
		Target: pr.target, Problem: pr.in.Task.ProblemSource, Kernel: parent.Source, Times: v.times(parent),
		Roofline: rooflineOf(parent), Metrics: metrics, NumBottlenecks: n, Explored: exploredFrom(parentID, v.h),
	})
	if err != nil {
		return nil, &fatalError{err}
	}
	dir := candidateDir(store.CandidateID(v.round, firstSlot, 0))
	reply, err := pr.ask(ctx, v.round, "", llm.PurposeDiagnose, p, dir+"/diagnose")
	if err != nil {
		return nil, pr.slotError(ctx, "diagnosis of "+parentID, err)
	}
	var d prompts.Diagnosis
	if err := llm.ExtractJSON(reply, &d); err != nil {
		pr.log.Warn("diagnosis unreadable; its slots yield nothing this round", "parent", parentID, "err", err)
		return nil, nil
	}
	d = d.Normalize(n)
	if err := d.Validate(); err != nil {
		pr.log.Warn("diagnosis unusable; its slots yield nothing this round", "parent", parentID, "err", err)
		return nil, nil
	}
	if len(d.Bottlenecks) < n {
		pr.log.Info("diagnosis gave fewer distinct directions than slots", "parent", parentID, "asked", n, "got", len(d.Bottlenecks))
	}
	if err := pr.art.writeJSON(dir+"/diagnosis.json", d); err != nil {
		return nil, &fatalError{err}
	}
	return d.Bottlenecks, nil
}

func rooflineOf(c store.Candidate) roofline.Result {
	if c.Roofline == nil {
		return roofline.Result{}
	}
	return *c.Roofline
}

// exploredFrom lists the directions already tried from a parent.
func exploredFrom(parentID string, h search.History) []string {
	var out []string
	for _, c := range sortedCandidates(h) {
		if c.ParentID == parentID && c.RefineAttempt == 0 && c.Direction != "" && !slices.Contains(out, c.Direction) {
			out = append(out, c.Direction)
		}
	}
	return out
}

// inspirationsOf are the slot's further parents as the prompt shows them.
func inspirationsOf(ids []string, h search.History) []prompts.Inspiration {
	var out []prompts.Inspiration
	for _, id := range ids {
		if c, ok := h.ByID[id]; ok {
			out = append(out, prompts.Inspiration{ID: id, Cell: search.Descriptor(c), TimeMS: c.MedianMS(), Source: c.Source})
		}
	}
	return out
}

// attemptsOn describes the earlier rewrites of a parent (each slot's last
// candidate), oldest first, at most historyInPrompts.
func attemptsOn(parentID string, h search.History) []prompts.Attempt {
	last := map[string]store.Candidate{}
	var keys []string
	for _, c := range sortedCandidates(h) {
		if c.ParentID != parentID || c.Round == 0 {
			continue
		}
		if c.Slot == 0 {
			continue
		}
		k := fmt.Sprint(c.Round, "/", c.Slot)
		if _, seen := last[k]; !seen {
			keys = append(keys, k)
		}
		last[k] = c
	}
	var out []prompts.Attempt
	for _, k := range keys {
		c := last[k]
		a := prompts.Attempt{Round: c.Round, Direction: c.Direction, TimeMS: c.MedianMS(), Passed: c.Status.Measured()}
		if c.Verdict != nil && !c.Verdict.Passed {
			a.Failure, a.Reason = c.Verdict.Failure, c.Verdict.Reason
		}
		out = append(out, a)
	}
	if len(out) > historyInPrompts {
		out = out[len(out)-historyInPrompts:]
	}
	return out
}

func sortedCandidates(h search.History) []store.Candidate {
	out := make([]store.Candidate, 0, len(h.ByID))
	for _, c := range h.ByID {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b store.Candidate) int { return store.CompareIDs(a.ID, b.ID) })
	return out
}

// reflectionRecord is a reflection as stored in the run's events.
type reflectionRecord struct {
	Candidate  string             `json:"candidate"`
	Reflection prompts.Reflection `json:"reflection"`
}

// reflections are the run's latest reflections, oldest first.
func (pr *proposer) reflections(ctx context.Context) []prompts.Reflection {
	recs := pr.storedReflections(ctx)
	var out []prompts.Reflection
	for _, r := range recs {
		out = append(out, r.Reflection)
	}
	if len(out) > historyInPrompts {
		out = out[len(out)-historyInPrompts:]
	}
	return out
}

func (pr *proposer) storedReflections(ctx context.Context) []reflectionRecord {
	evs, err := pr.st.Events(ctx, pr.runID, 0, 0)
	if err != nil {
		pr.log.Warn("read reflections", "err", err)
		return nil
	}
	var out []reflectionRecord
	for _, e := range evs {
		if e.Kind != storeEventReflection {
			continue
		}
		var r reflectionRecord
		if json.Unmarshal(e.Data, &r) == nil {
			out = append(out, r)
		}
	}
	return out
}

// reflectAll reflects on each slot's last candidate (passed or failed) that
// has no reflection yet, concurrently.
func (pr *proposer) reflectAll(ctx context.Context, v view, slots []search.Slot, finals []*store.Candidate, diags map[string][]prompts.Bottleneck) error {
	if pr.in.LLM == nil {
		return nil
	}
	done := map[string]bool{}
	for _, rec := range pr.storedReflections(ctx) {
		done[rec.Candidate] = true
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var fatal error
	for i, s := range slots {
		c := finals[i]
		if c == nil || s.Variant != nil || s.Retime != "" || done[c.ID] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := pr.reflect(ctx, v, s, *c, diags); err != nil {
				mu.Lock()
				if fatal == nil {
					fatal = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return fatal
}

// reflect asks the LLM what one attempt teaches and records the answer. An
// unreadable reply gives a plain reflection from the numbers.
func (pr *proposer) reflect(ctx context.Context, v view, s search.Slot, c store.Candidate, diags map[string][]prompts.Bottleneck) error {
	r := v.round
	if pr.budgetStopped() != "" {
		return nil
	}
	parent := v.h.ByID[c.ParentID]
	b := bottleneckFromDirection(c.Direction)
	if bs := diags[c.ParentID]; s.Rank >= 1 && s.Rank <= len(bs) {
		b = bs[s.Rank-1]
	}
	// The latest state of the candidate (a promotion phase may have rejected it).
	if cur, err := pr.st.Candidate(ctx, pr.runID, c.ID); err == nil {
		c = cur
	}
	d := prompts.ReflectData{Target: pr.target, Round: r, Bottleneck: b, BeforeMS: parent.MedianMS(), AfterMS: c.MedianMS(),
		Before: rooflineOf(parent), After: rooflineOf(c), Passed: c.Status.Measured()}
	if c.Verdict != nil && !c.Verdict.Passed {
		d.Failure, d.Reason = c.Verdict.Failure, c.Verdict.Reason
	}
	p, err := pr.in.Prompts.Reflect(d)
	if err != nil {
		return &fatalError{err}
	}
	reply, err := pr.ask(ctx, r, c.ID, llm.PurposeReflect, p, candidateFile(c.ID, "reflect"))
	if err != nil {
		return pr.slotError(ctx, c.ID, err)
	}
	var ref prompts.Reflection
	if err := llm.ExtractJSON(reply, &ref); err != nil {
		ref = fallbackReflection(d, err)
	}
	ref.Round = r
	data, err := json.Marshal(reflectionRecord{Candidate: c.ID, Reflection: ref})
	if err != nil {
		return &fatalError{err}
	}
	_, err = pr.st.AddEvent(ctx, store.Event{RunID: pr.runID, Round: r, CandidateID: c.ID, Kind: storeEventReflection,
		Message: clip(ref.Reasoning, 200), Data: data})
	if err != nil {
		return &fatalError{err}
	}
	return nil
}

// fallbackReflection states what the numbers show when the model's
// reflection cannot be read.
func fallbackReflection(d prompts.ReflectData, err error) prompts.Reflection {
	out := prompts.Reflection{Reasoning: "the model's reflection was unreadable (" + oneLine(err.Error()) + "); this one states the measurements"}
	switch {
	case !d.Passed:
		out.ActualOutcome = "failed " + d.Failure + ": " + d.Reason
	case d.AfterMS > 0 && d.BeforeMS > 0:
		pct := (d.BeforeMS - d.AfterMS) / d.BeforeMS * 100
		out.ActualOutcome = fmt.Sprintf("%.1f%% faster than its parent", pct)
		out.WasFixEffective = pct > 0
	}
	return out
}

// bottleneckFromDirection rebuilds a bottleneck from its one-line label.
func bottleneckFromDirection(dir string) prompts.Bottleneck {
	cat, sum, ok := strings.Cut(dir, ": ")
	if !ok {
		return prompts.Bottleneck{Summary: dir}
	}
	return prompts.Bottleneck{Category: cat, Summary: sum}
}
