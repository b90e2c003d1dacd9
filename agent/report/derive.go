package report

import (
	"fmt"
	"path/filepath"

	"github.com/kagent-kernels/kagent/internal/ratio"
)

// derived holds the numbers every output shows, computed once from Data.
type derived struct {
	best   int // index into Data.Candidates, -1 when nothing is correct
	rounds []roundRow
}

// roundRow is one round: its candidates and the best time so far.
type roundRow struct {
	Round     int
	Made      int // candidates made in the round
	Correct   int
	BestID    string // fastest correct candidate up to and including the round
	BestMS    float64
	Improved  bool // the round lowered the best time
	RoundBest float64
}

func (d Data) derive() (derived, error) {
	ids := make(map[string]int, len(d.Candidates))
	for i, c := range d.Candidates {
		if _, dup := ids[c.ID]; dup {
			return derived{}, fmt.Errorf("check report data: %w: %q", ErrDuplicateCandidate, c.ID)
		}
		ids[c.ID] = i
	}
	out := derived{best: -1}
	if d.BestID != "" {
		i, ok := ids[d.BestID]
		if !ok {
			return derived{}, fmt.Errorf("check report data: %w: best %q", ErrUnknownCandidate, d.BestID)
		}
		out.best = i
	} else {
		for i, c := range d.Candidates {
			if c.Correct() && (out.best < 0 || c.Time.MedianMS < d.Candidates[out.best].Time.MedianMS) {
				out.best = i
			}
		}
	}
	last := -1
	for _, c := range d.Candidates {
		last = max(last, c.Round)
	}
	bestID, bestMS := "", 0.0
	for r := 0; r <= last; r++ {
		row := roundRow{Round: r}
		for _, c := range d.Candidates {
			if c.Round != r {
				continue
			}
			row.Made++
			if !c.Correct() {
				continue
			}
			row.Correct++
			if row.RoundBest == 0 || c.Time.MedianMS < row.RoundBest {
				row.RoundBest = c.Time.MedianMS
			}
			if bestMS == 0 || c.Time.MedianMS < bestMS {
				bestID, bestMS = c.ID, c.Time.MedianMS
				row.Improved = r > 0
			}
		}
		row.BestID, row.BestMS = bestID, bestMS
		out.rounds = append(out.rounds, row)
	}
	return out, nil
}

// kernelDir is KernelDir as the report shows it: relative, or the base name.
func (d Data) kernelDir() string {
	if filepath.IsAbs(d.KernelDir) {
		return filepath.Base(d.KernelDir)
	}
	return d.KernelDir
}

// speedups of a time over eager, torch.compile and the input kernel
// (baseline time / time; 0 when either is unknown).
func (d Data) speedups(ms float64) (eager, compile, input float64) {
	b := d.Baselines
	return ratio.Of(b.Eager.MedianMS, ms), ratio.Of(b.Compile.MedianMS, ms), ratio.Of(b.Input.MedianMS, ms)
}

// floorFraction is the floor over a time: 1 means at the physical limit.
func (d Data) floorFraction(ms float64) float64 { return ratio.Of(d.Work.FloorMS, ms) }

// placement is a candidate's position on the roofline.
type placement struct {
	Intensity float64 // FLOP per byte
	GBs       float64 // achieved GB/s
	GFLOPs    float64 // achieved GFLOP/s
}

// place puts a timed candidate on the roofline, with the problem's work
// when the profiler measured none.
func (d Data) place(c Candidate) placement {
	bytes, flops := c.Bytes, c.FLOPs
	if bytes <= 0 {
		bytes = d.Work.Bytes
	}
	if flops <= 0 {
		flops = d.Work.FLOPs
	}
	ms := c.Time.MedianMS
	p := placement{Intensity: ratio.Of(flops, bytes)}
	if ms > 0 {
		p.GBs = ratio.Of(bytes, ms*1e6)
		p.GFLOPs = ratio.Of(flops, ms*1e6)
	}
	return p
}
