package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/kagent-kernels/kagent/internal/ratio"
)

// Schema names the version of report.json's layout. Fields are only ever
// added within a version.
const Schema = "kagent.report/v1"

// jsonReport is report.json (see JSON for the fields).
type jsonReport struct {
	Schema         string          `json:"schema"`
	RunID          string          `json:"run_id"`
	Name           string          `json:"name"`
	KernelDir      string          `json:"kernel_dir"`
	Strategy       string          `json:"strategy"`
	Platform       string          `json:"platform"`
	Device         string          `json:"device"`
	Isolation      string          `json:"isolation,omitempty"`
	DType          string          `json:"dtype"`
	Size           string          `json:"size,omitempty"`
	TF32           string          `json:"tf32"`
	Representative bool            `json:"representative"`
	StartedAt      *string         `json:"started_at"`
	FinishedAt     *string         `json:"finished_at"`
	GPU            jsonGPU         `json:"gpu"`
	Work           jsonWork        `json:"work"`
	Baselines      jsonBaselines   `json:"baselines"`
	Best           *jsonBest       `json:"best"`
	StopReason     string          `json:"stop_reason"`
	LLM            jsonUsage       `json:"llm"`
	Rounds         []jsonRound     `json:"rounds"`
	Duplicates     jsonDuplicates  `json:"duplicates"`
	Candidates     []jsonCandidate `json:"candidates"`
	Screening      *jsonScreening  `json:"screening,omitempty"`
	Notes          []string        `json:"notes"`
}

type jsonScreening struct {
	Variants int            `json:"variants"`
	Passed   int            `json:"passed"`
	Shapes   []string       `json:"shapes"`
	Method   string         `json:"method"`
	Pareto   []jsonScreened `json:"pareto"`
	More     int            `json:"more"`
}

type jsonScreened struct {
	Label     string `json:"label"`
	Source    string `json:"source"`
	Candidate string `json:"candidate"`
	MedianMS  num    `json:"median_ms"`
	ShapesMS  []num  `json:"shapes_ms"`
}

type jsonDuplicates struct {
	BySource int `json:"by_source"`
	ByCode   int `json:"by_code"`
}

type jsonGPU struct {
	Name       string `json:"name"`
	Units      int    `json:"units"`
	MemBWGBs   num    `json:"mem_bw_gbs"`
	PeakTFLOPS num    `json:"peak_tflops"`
	MemGB      num    `json:"mem_gb"`
	L2MB       num    `json:"l2_mb"`
}

type jsonWork struct {
	Bytes     num `json:"bytes"`
	FLOPs     num `json:"flops"`
	FloorMS   num `json:"floor_ms"`
	Intensity num `json:"arithmetic_intensity"`
}

type jsonTiming struct {
	MedianMS    num    `json:"median_ms"`
	P20MS       num    `json:"p20_ms"`
	P80MS       num    `json:"p80_ms"`
	CV          num    `json:"cv"`
	N           int    `json:"n"`
	Unavailable string `json:"unavailable"`
	HostMS      num    `json:"host_ms"`
	HostBound   bool   `json:"host_bound"`
	Clock       string `json:"clock"`
	LateCalls   int    `json:"late_calls"`
	// Budget names a screening timing's budget; absent for the full timing.
	Budget string `json:"budget,omitempty"`
}

type jsonBaselines struct {
	Eager   jsonTiming `json:"eager"`
	Compile jsonTiming `json:"compile"`
	Input   jsonTiming `json:"input"`
}

type jsonBest struct {
	ID             string `json:"id"`
	MedianMS       num    `json:"median_ms"`
	SpeedupEager   num    `json:"speedup_vs_eager"`
	SpeedupCompile num    `json:"speedup_vs_compile"`
	SpeedupInput   num    `json:"speedup_vs_input"`
	FloorFraction  num    `json:"floor_fraction"`
}

type jsonUsage struct {
	Calls            int    `json:"calls"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	TokensEstimated  bool   `json:"tokens_estimated"`
	EstimatedCalls   int    `json:"estimated_calls"`
	CostUSD          amount `json:"cost_usd"`
	// ByModel is set on the run's total only.
	ByModel []jsonModel `json:"by_model,omitempty"`
}

type jsonModel struct {
	Model            string `json:"model"`
	Calls            int    `json:"calls"`
	PromptTokens     int64  `json:"prompt_tokens"`
	CompletionTokens int64  `json:"completion_tokens"`
	EstimatedCalls   int    `json:"estimated_calls"`
	CostUSD          amount `json:"cost_usd"`
}

type jsonRound struct {
	Round      int    `json:"round"`
	Candidates int    `json:"candidates"`
	Correct    int    `json:"correct"`
	BestID     string `json:"best_id"`
	BestMS     num    `json:"best_ms"`
	Improved   bool   `json:"improved"`
}

type jsonCandidate struct {
	ID             string     `json:"id"`
	Round          int        `json:"round"`
	Parent         string     `json:"parent"`
	Bottleneck     int        `json:"bottleneck"`
	Direction      string     `json:"direction"`
	Label          string     `json:"label"`
	Status         string     `json:"status"`
	Correct        bool       `json:"correct"`
	Best           bool       `json:"best"`
	Failure        string     `json:"failure"`
	Reason         string     `json:"reason"`
	DuplicateBy    string     `json:"duplicate_by,omitempty"`
	Timing         jsonTiming `json:"timing"`
	SpeedupEager   num        `json:"speedup_vs_eager"`
	SpeedupCompile num        `json:"speedup_vs_compile"`
	SpeedupInput   num        `json:"speedup_vs_input"`
	FloorFraction  num        `json:"floor_fraction"`
	Intensity      num        `json:"arithmetic_intensity"`
	AchievedGBs    num        `json:"achieved_gbs"`
	AchievedGFLOPs num        `json:"achieved_gflops"`
	RooflineClass  string     `json:"roofline_class"`
	SOL            num        `json:"sol_pct"`
	LLM            jsonUsage  `json:"llm"`
}

// num is a measured number: zero (not measured), NaN and ±Inf are written
// as null.
type num float64

// MarshalJSON implements json.Marshaler.
func (n num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.AppendFloat(nil, f, 'f', 0, 64), nil // byte and FLOP counts
	}
	// Six significant digits: stable across platforms, precise enough for
	// any timing.
	return strconv.AppendFloat(nil, f, 'g', 6, 64), nil
}

// amount is a number for which zero is a value (money spent): only NaN and
// ±Inf are written as null.
type amount float64

// MarshalJSON implements json.Marshaler.
func (a amount) MarshalJSON() ([]byte, error) {
	if a == 0 {
		return []byte("0"), nil
	}
	return num(a).MarshalJSON()
}

func timing(s Stats) jsonTiming {
	return jsonTiming{MedianMS: num(s.MedianMS), P20MS: num(s.P20MS), P80MS: num(s.P80MS),
		CV: num(s.CV), N: s.N, Unavailable: s.Unavailable, HostMS: num(s.HostMS), HostBound: s.HostBound, Budget: s.Budget,
		Clock: s.Clock, LateCalls: s.Late}
}

func usage(u Usage) jsonUsage {
	return jsonUsage{Calls: u.Calls, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens,
		TokensEstimated: u.EstimatedCalls > 0, EstimatedCalls: u.EstimatedCalls, CostUSD: amount(u.CostUSD)}
}

func timestamp(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	s := t.UTC().Format(time.RFC3339)
	return &s
}

// JSON renders report.json, standard JSON with these stable fields. Numbers
// a run did not measure are null (never NaN or Infinity; cost_usd is 0 when
// nothing was spent); times are milliseconds; a speedup is the baseline's
// time over the candidate's, so 2 means twice as fast; floor_fraction is the
// roofline floor over the time, 1 being the physical limit; rounds[].best_*
// is the best so far after the round; correct is true for a candidate that
// passed verification and was timed.
//
//	schema                     "kagent.report/v1"
//	run_id, name, kernel_dir, strategy, platform, device, dtype, tf32
//	                           (kernel_dir is relative to the run dir, or a base name)
//	representative             false: the times say nothing about GPU speed
//	started_at, finished_at    RFC 3339, UTC, or null
//	gpu                        {name, units, mem_bw_gbs, peak_tflops, mem_gb, l2_mb}
//	work                       {bytes, flops, floor_ms, arithmetic_intensity}
//	baselines                  {eager, compile, input}: timing objects
//	  timing                   {median_ms, p20_ms, p80_ms, cv, n, unavailable,
//	                           host_ms, host_bound}: host_ms is the host time to
//	                           enqueue one call (null: unknown); host_bound marks
//	                           a GPU time it came near (the time includes host overhead);
//	                           budget (absent for a full timing) names the screening
//	                           budget of a time taken with less (halving's early rungs)
//	best                       null, or {id, median_ms, speedup_vs_eager,
//	                           speedup_vs_compile, speedup_vs_input, floor_fraction}
//	stop_reason
//	llm                        {calls, prompt_tokens, completion_tokens, tokens_estimated,
//	                           estimated_calls, cost_usd}: tokens_estimated is true when
//	                           the server reported no usage for estimated_calls of the
//	                           calls, whose tokens (and cost) kagent then estimated;
//	                           by_model[] {model, calls, prompt_tokens,
//	                           completion_tokens, estimated_calls, cost_usd} splits it
//	                           by the model that answered (one row per model, sorted)
//	rounds[]                   {round, candidates, correct, best_id, best_ms, improved}
//	duplicates                 {by_source, by_code}: candidates skipped without
//	                           running as repeats of an earlier one, found by
//	                           normalised source or by code fingerprint
//	candidates[]               {id, round, parent, bottleneck, direction, label,
//	                           status, correct, best, failure, reason, duplicate_by, timing,
//	                           speedup_vs_eager, speedup_vs_compile, speedup_vs_input,
//	                           floor_fraction, arithmetic_intensity, achieved_gbs,
//	                           achieved_gflops, roofline_class, sol_pct, llm}
//	screening                  absent unless the run screened variants (autotune):
//	                           {variants, passed, shapes[], method, pareto[], more}:
//	                           pareto[] {label, source, candidate, median_ms, shapes_ms[]}
//	                           are the screened variants no other beats at every
//	                           shape (the timed one, then shapes[], the held-out
//	                           ones), fastest first; source is the variant's file
//	                           (relative to the run dir), candidate the id that
//	                           verified and timed it in full ("" if none); more
//	                           counts those left out; screen times rank variants,
//	                           they are not candidates' times
//	notes[]
func JSON(d Data) ([]byte, error) {
	der, err := d.derive()
	if err != nil {
		return nil, err
	}
	r := jsonReport{
		Schema: Schema, RunID: d.RunID, Name: d.Name, KernelDir: d.kernelDir(), Strategy: d.Strategy,
		Platform: d.Platform, Device: d.Device, Isolation: d.Isolation, DType: d.DType, Size: d.Size, TF32: d.TF32,
		Representative: d.Representative,
		StartedAt:      timestamp(d.StartedAt), FinishedAt: timestamp(d.FinishedAt),
		GPU: jsonGPU{Name: d.GPU.Name, Units: d.GPU.Units, MemBWGBs: num(d.GPU.MemBWGBs),
			PeakTFLOPS: num(d.GPU.PeakTFLOPS), MemGB: num(d.GPU.MemGB), L2MB: num(d.GPU.L2MB)},
		Work: jsonWork{Bytes: num(d.Work.Bytes), FLOPs: num(d.Work.FLOPs), FloorMS: num(d.Work.FloorMS),
			Intensity: num(ratio.Of(d.Work.FLOPs, d.Work.Bytes))},
		Baselines: jsonBaselines{Eager: timing(d.Baselines.Eager), Compile: timing(d.Baselines.Compile),
			Input: timing(d.Baselines.Input)},
		StopReason: d.StopReason,
		LLM:        usage(d.LLM),
		Rounds:     []jsonRound{},
		Candidates: []jsonCandidate{},
		Notes:      append([]string{}, d.Notes...),
	}
	for _, m := range d.Models {
		r.LLM.ByModel = append(r.LLM.ByModel, jsonModel{Model: m.Model, Calls: m.Calls, PromptTokens: m.PromptTokens,
			CompletionTokens: m.CompletionTokens, EstimatedCalls: m.EstimatedCalls, CostUSD: amount(m.CostUSD)})
	}
	r.Duplicates.BySource, r.Duplicates.ByCode = d.Duplicates()
	if der.best >= 0 {
		b := d.Candidates[der.best]
		e, c, i := d.speedups(b.Time.MedianMS)
		r.Best = &jsonBest{ID: b.ID, MedianMS: num(b.Time.MedianMS), SpeedupEager: num(e),
			SpeedupCompile: num(c), SpeedupInput: num(i), FloorFraction: num(d.floorFraction(b.Time.MedianMS))}
	}
	for _, row := range der.rounds {
		r.Rounds = append(r.Rounds, jsonRound{Round: row.Round, Candidates: row.Made, Correct: row.Correct,
			BestID: row.BestID, BestMS: num(row.BestMS), Improved: row.Improved})
	}
	for i, c := range d.Candidates {
		jc := jsonCandidate{ID: c.ID, Round: c.Round, Parent: c.Parent, Bottleneck: c.Bottleneck,
			Direction: c.Direction, Label: c.Label, Status: c.Status, Correct: c.Correct(),
			Best: i == der.best, Failure: c.Failure, Reason: c.Reason, DuplicateBy: c.DuplicateBy, Timing: timing(c.Time),
			RooflineClass: c.RooflineClass, SOL: num(c.SOL), LLM: usage(c.LLM)}
		if c.Correct() {
			ms := c.Time.MedianMS
			e, cm, in := d.speedups(ms)
			p := d.place(c)
			jc.SpeedupEager, jc.SpeedupCompile, jc.SpeedupInput = num(e), num(cm), num(in)
			jc.FloorFraction = num(d.floorFraction(ms))
			jc.Intensity, jc.AchievedGBs, jc.AchievedGFLOPs = num(p.Intensity), num(p.GBs), num(p.GFLOPs)
		}
		r.Candidates = append(r.Candidates, jc)
	}
	if sc := d.Screening; sc != nil {
		r.Screening = &jsonScreening{Variants: sc.Variants, Passed: sc.Passed, Shapes: append([]string{}, sc.Shapes...),
			Method: sc.Method, Pareto: []jsonScreened{}, More: sc.More}
		for _, v := range sc.Pareto {
			js := jsonScreened{Label: v.Label, Source: v.Source, Candidate: v.ID, MedianMS: num(v.MS), ShapesMS: []num{}}
			for _, ms := range v.ShapesMS {
				js.ShapesMS = append(js.ShapesMS, num(ms))
			}
			r.Screening.Pareto = append(r.Screening.Pareto, js)
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
