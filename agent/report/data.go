// Package report writes what an optimisation run found: report.md (a
// summary first, then the round table and the rejected candidates with
// their reasons), report.json (the same facts under stable field names, see
// json.go) and two SVG plots: the best time per round against PyTorch
// eager, torch.compile and the roofline floor, and every candidate on the
// GPU's roofline (a platform without peak figures, the cpu platform, gets
// a plot that says there is no roofline). Reports hold no absolute paths,
// and the plots name their font with fallbacks ending in a generic family.
//
// The loop fills a Data from its store and calls Write; every derived number
// (speedups, fractions of the floor, best per round) is computed here, from
// the times in Data, so the four files always agree.
package report

import (
	"fmt"
	"time"

	"github.com/kagent-kernels/kagent/roofline"
)

// Data is everything a report shows. Times are in milliseconds; a zero
// number means "not measured" and is shown as "n/a" (null in JSON).
type Data struct {
	RunID string
	// Name is the problem's name (kagent.yaml name, else the dir's base).
	Name string
	// KernelDir is the kernel dir relative to the run dir the report is
	// written into ("../../.." for the default run dir); reports hold no
	// absolute path, so an absolute one is shown as its base name. Paths in
	// reasons and the stop reason are the caller's to make relative.
	KernelDir string
	Strategy  string
	Platform  string
	// Device is the device name torch reports ("NVIDIA H200").
	Device string
	GPU    GPU
	DType  string // fp32, fp16, bf16
	// Size is the timed shape ("default", or the overrides of the problem's
	// size constants that every time was measured at).
	Size string
	// TF32 is the policy reference and candidates ran under (allow|forbid).
	TF32 string
	// Isolation is how candidates were kept from the judge and the machine
	// ("" where nothing ran them).
	Isolation string
	// Representative is false when the timings say nothing about GPU
	// performance (the cpu platform); the report then says so up front.
	Representative bool
	StartedAt      time.Time
	FinishedAt     time.Time
	Baselines      Baselines
	Work           Work
	// Candidates are every candidate of the run, the input kernel (round 0)
	// included, in the order they were made.
	Candidates []Candidate
	// BestID is the candidate the run chose (after the acceptance gate);
	// "" lets the report pick the fastest correct one.
	BestID     string
	StopReason string
	// LLM is the run's total spend (candidates carry their own share).
	LLM Usage
	// Models splits LLM by the model that answered, sorted by name
	// (llm.steps lets several models serve a run).
	Models []ModelUsage
	// Notes are extra lines shown under the summary.
	Notes []string
	// Screening summarises the variants the run screened (the autotune
	// strategy); nil when it screened none.
	Screening *Screening
}

// Screening is what a run's screens found: how many variants, and the
// variants no other screened one beats at every shape (the timed shape and
// the held-out ones), fastest at the timed shape first. Screen times rank
// variants; they are not candidates' times.
type Screening struct {
	Variants int
	Passed   int
	// Shapes are the held-out shapes' labels, in the order of ShapesMS.
	Shapes []string
	Pareto []ScreenedVariant
	// More counts the Pareto variants left out of Pareto (it keeps the
	// fastest few at the timed shape).
	More int
	// Method says how the variants were screened.
	Method string
}

// ScreenedVariant is one screened variant.
type ScreenedVariant struct {
	Label string
	// Source is the variant's source file, relative to the run dir.
	Source string
	// ID is the candidate that verified and timed it in full, if any.
	ID       string
	MS       float64
	ShapesMS []float64
}

// GPU summarises the device and gives the roofs of the roofline chart.
type GPU struct {
	Name  string
	Units int // SMs, CUs or Xe-cores
	// MemBWGBs is the memory roof in GB/s; PeakTFLOPS is the compute roof
	// for the run's data type. Zero: not drawn.
	MemBWGBs   float64
	PeakTFLOPS float64
	MemGB      float64
	L2MB       float64
}

// hasPeaks reports whether the GPU has a roof to draw (the cpu platform
// has neither).
func (g GPU) hasPeaks() bool { return g.MemBWGBs > 0 || g.PeakTFLOPS > 0 }

// Stats are the timing statistics of one target.
type Stats struct {
	MedianMS float64
	P20MS    float64
	P80MS    float64
	// CV is the coefficient of variation (stddev / mean) of the samples.
	CV float64
	N  int
	// Unavailable says why the target was not timed ("torch.compile missing").
	Unavailable string
	// HostMS is the host time to enqueue one call (0: unknown); HostBound
	// marks a GPU time it came near (platform.Timing.HostBound).
	HostMS    float64
	HostBound bool
	// Clock names what timed it (platform.Timing.Clock: device, events,
	// cpu; "" unknown) and Late the calls enqueued after their spin ended.
	Clock string
	Late  int
	// Budget names the screening budget of a screening timing (successive
	// halving's early rungs; platform.Timing.Budget), "" for the full one.
	Budget string
}

// Baselines are the reference times of the run.
type Baselines struct {
	Eager   Stats
	Compile Stats // torch.compile
	Input   Stats // the input kernel
}

// Work is the problem's minimum traffic and arithmetic, and the floor they
// give on this GPU.
type Work struct {
	Bytes float64 // bytes that must be read and written at least once
	FLOPs float64
	// FloorMS is the roofline floor: no correct kernel runs faster.
	FloorMS float64
}

// Candidate statuses the report tells apart (the store's names).
const (
	StatusRejected = "rejected" // failed a check: Failure and Reason say which and why
	StatusFailed   = "failed"   // a step could not complete: Reason says why
)

// Candidate is one kernel the run tried.
type Candidate struct {
	ID     string
	Round  int
	Parent string // "" for the input kernel
	// Bottleneck is the 1-based rank of the direction the rewrite targeted
	// (0: none); Direction says it in words.
	Bottleneck int
	Direction  string
	// Label names a tune candidate's knob values ("BLOCK=2048 num_warps=8").
	Label string
	// Status is the store's status (profiled, timed, rejected, failed, ...).
	Status string
	// Failure names the failed check (correctness, extra_shapes, ...);
	// Reason is its one-line reason.
	Failure string
	Reason  string
	Time    Stats
	// Bytes and FLOPs are what the profiler measured for one call (0: use
	// Data.Work); they place the candidate on the roofline.
	Bytes float64
	FLOPs float64
	// RooflineClass is memory, compute or latency, or unknown for a
	// candidate the profile could not place (shown as n/a); SOL is the
	// speed-of-light percentage of the binding limit.
	RooflineClass string
	SOL           float64
	LLM           Usage
	// DuplicateBy says how a rejected duplicate was found without running
	// it: "source" (normalised source) or "code" (code fingerprint); "" for
	// any other candidate.
	DuplicateBy string
	// Cut: a knob variant stopped after a quick timing slower than the best
	// (strategy_config.cut_slower_pct), neither verified nor timed, so
	// neither correct nor a rejected kernel.
	Cut bool
}

// Duplicates counts the candidates skipped as duplicates, by how they were
// found.
func (d Data) Duplicates() (bySource, byCode int) {
	for _, c := range d.Candidates {
		switch c.DuplicateBy {
		case "source":
			bySource++
		case "code":
			byCode++
		}
	}
	return bySource, byCode
}

// Correct reports whether the candidate passed verification and was timed.
func (c Candidate) Correct() bool {
	return c.Failure == "" && c.Status != StatusRejected && c.Status != StatusFailed && c.Time.MedianMS > 0
}

// Usage is LLM spend.
type Usage struct {
	Calls            int
	PromptTokens     int64
	CompletionTokens int64
	// EstimatedCalls counts the calls whose tokens kagent estimated (the
	// server reported no usage); their tokens and dollars are estimates.
	EstimatedCalls int
	CostUSD        float64
}

// ModelUsage is the spend of one model.
type ModelUsage struct {
	Model string
	Usage
}

// EstimatedTag is what follows a token count of which estimatedCalls of
// calls were estimated: "" (none), " (estimated)" (all) or
// " (estimated for 3 of 11 calls)". Every place that shows LLM tokens uses it.
func EstimatedTag(estimatedCalls, calls int) string {
	switch {
	case estimatedCalls <= 0:
		return ""
	case estimatedCalls >= calls:
		return " (estimated)"
	}
	return fmt.Sprintf(" (estimated for %d of %d calls)", estimatedCalls, calls)
}

// GPUFromSpecs summarises a GPU of the specs database; the compute roof is
// the peak for dtype ("fp32", "tf32", "bf16", ...; the database's fallback
// rules apply, and an unknown dtype leaves the roof out).
func GPUFromSpecs(s roofline.Specs, dtype string) GPU {
	peak, _, err := s.PeakTFLOPS(dtype)
	if err != nil {
		peak = 0
	}
	return GPU{Name: s.Name, Units: s.Units, MemBWGBs: s.MemBWGBs, PeakTFLOPS: peak, MemGB: s.MemGB, L2MB: s.L2MB}
}
