package search

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/roofline"
)

// eliteCand builds a measured candidate in a chosen cell: class is the roofline
// class ("" leaves it unplaced) and block the BLOCK literal of its source.
func eliteCand(id string, ms float64, class roofline.Class, block int) store.Candidate {
	c := cand(id, ms, "h-"+id)
	c.Source = "BLOCK_SIZE = " + strconv.Itoa(block) + "\n"
	if id != "input" {
		c.Round = 1
	}
	if class != "" {
		c.Roofline = &roofline.Result{Class: class}
	}
	return c
}

func TestDescriptor(t *testing.T) {
	tests := []struct {
		name string
		c    store.Candidate
		want string
	}{
		{"unplaced, nothing set", store.Candidate{Source: "x = 1\n"}, "unplaced/block?/warps?"},
		{"memory, small block, warps in a launch", store.Candidate{Roofline: &roofline.Result{Class: roofline.ClassMemory},
			Source: "k[grid](x, BLOCK_M=64, BLOCK_N=128, num_warps=4)\n"}, "memory/block<=128/warps<=4"},
		{"annotated constant, many warps", store.Candidate{Roofline: &roofline.Result{Class: roofline.ClassCompute},
			Source: "BLOCK: tl.constexpr = 2048\nk[g](num_warps = 8)\n"}, "compute/block>1024/warps>4"},
		{"comments do not count", store.Candidate{Source: "BLOCK = 256  # BLOCK = 4096\n# num_warps=16\n"}, "unplaced/block<=1024/warps?"},
		{"unknown class is unplaced", store.Candidate{Roofline: &roofline.Result{Class: roofline.ClassUnknown}, Source: ""}, "unplaced/block?/warps?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Descriptor(tt.c); got != tt.want {
				t.Errorf("Descriptor = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestElitesUpdate(t *testing.T) {
	e := elites{n: 2, m: 1, k: 2}
	in := eliteCand("input", 10, roofline.ClassMemory, 256)
	tests := []struct {
		name     string
		state    State
		history  History
		measured []store.Candidate
		want     map[string]string
	}{
		{
			name:     "an empty archive takes the best and each new cell",
			state:    State{BestID: "input"},
			history:  hist(in),
			measured: []store.Candidate{eliteCand("r1c1", 12, roofline.ClassMemory, 64), eliteCand("r1c2", 11, roofline.ClassLatency, 256)},
			want: map[string]string{"memory/block<=1024/warps?": "input", "memory/block<=128/warps?": "r1c1",
				"latency/block<=1024/warps?": "r1c2"},
		},
		{
			name:     "the input enters the archive when it is no longer the best",
			state:    State{BestID: "r1c1"},
			history:  hist(in, eliteCand("r1c1", 5, roofline.ClassMemory, 64)),
			measured: []store.Candidate{eliteCand("r1c1", 5, roofline.ClassMemory, 64)},
			want:     map[string]string{"memory/block<=1024/warps?": "input", "memory/block<=128/warps?": "r1c1"},
		},
		{
			name:     "a faster kernel replaces its cell's elite",
			state:    State{BestID: "input", Archive: map[string]string{"memory/block<=1024/warps?": "input"}},
			history:  hist(in),
			measured: []store.Candidate{eliteCand("r1c1", 9, roofline.ClassMemory, 512)},
			want:     map[string]string{"memory/block<=1024/warps?": "r1c1"},
		},
		{
			name:     "a slower or equal kernel does not",
			state:    State{BestID: "input", Archive: map[string]string{"memory/block<=1024/warps?": "input"}},
			history:  hist(in),
			measured: []store.Candidate{eliteCand("r1c1", 10, roofline.ClassMemory, 512), eliteCand("r1c2", 10.5, roofline.ClassMemory, 1024)},
			want:     map[string]string{"memory/block<=1024/warps?": "input"},
		},
		{
			name:     "the fastest of a round wins a new cell",
			state:    State{BestID: "input", Archive: map[string]string{"memory/block<=1024/warps?": "input"}},
			history:  hist(in),
			measured: []store.Candidate{eliteCand("r1c2", 7, roofline.ClassCompute, 64), eliteCand("r1c1", 8, roofline.ClassCompute, 32)},
			want:     map[string]string{"memory/block<=1024/warps?": "input", "compute/block<=128/warps?": "r1c2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.state
			h := tt.history
			for _, c := range tt.measured {
				h.ByID[c.ID] = c
			}
			e.Update(&s, Outcome{Measured: tt.measured}, h)
			if !reflect.DeepEqual(s.Archive, tt.want) {
				t.Errorf("archive = %v, want %v", s.Archive, tt.want)
			}
			if s.NoImprovement != 1 {
				t.Errorf("no_improvement = %d after a round without a promotion", s.NoImprovement)
			}
		})
	}
}

func TestElitesSlots(t *testing.T) {
	a := eliteCand("input", 10, roofline.ClassMemory, 256)
	b := eliteCand("r1c1", 8, roofline.ClassMemory, 64)
	c := eliteCand("r1c2", 12, roofline.ClassLatency, 256)
	d := eliteCand("r1c3", 9, roofline.ClassCompute, 4096)
	h := hist(a, b, c, d)
	archive := map[string]string{Descriptor(a): "input", Descriptor(b): "r1c1", Descriptor(c): "r1c2", Descriptor(d): "r1c3"}
	tests := []struct {
		name  string
		e     elites
		state State
		want  []Slot
	}{
		{
			name:  "no archive yet: the best takes every slot",
			e:     elites{n: 2, m: 1, k: 2},
			state: State{BestID: "input"},
			want: []Slot{{Index: 1, Parents: []string{"input"}, Rank: 1},
				{Index: 2, Parents: []string{"input"}, Rank: 2}},
		},
		{
			name:  "the best's cell, then the fastest other cells, each with the fastest elites of other cells",
			e:     elites{n: 3, m: 1, k: 2},
			state: State{BestID: "r1c1", Archive: archive},
			want: []Slot{{Index: 1, Parents: []string{"r1c1", "r1c3", "input"}, Rank: 1},
				{Index: 2, Parents: []string{"r1c3", "r1c1", "input"}, Rank: 1},
				{Index: 3, Parents: []string{"input", "r1c1", "r1c3"}, Rank: 1}},
		},
		{
			name:  "m directions per cell, k inspirations",
			e:     elites{n: 2, m: 2, k: 1},
			state: State{BestID: "r1c1", Archive: archive},
			want: []Slot{{Index: 1, Parents: []string{"r1c1", "r1c3"}, Rank: 1}, {Index: 2, Parents: []string{"r1c1", "r1c3"}, Rank: 2},
				{Index: 3, Parents: []string{"r1c3", "r1c1"}, Rank: 1}, {Index: 4, Parents: []string{"r1c3", "r1c1"}, Rank: 2}},
		},
		{
			name:  "no inspirations asked",
			e:     elites{n: 1, m: 1, k: 0},
			state: State{BestID: "r1c1", Archive: archive},
			want:  []Slot{{Index: 1, Parents: []string{"r1c1"}, Rank: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.e.Slots(context.Background(), &tt.state, h)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("slots = %+v\nwant %+v", got, tt.want)
			}
			cells := map[string]bool{}
			for _, s := range got {
				cells[Descriptor(h.ByID[s.Parent()])] = true
			}
			if parents := distinctParents(got); len(cells) != parents {
				t.Errorf("%d parents share %d cells", parents, len(cells))
			}
			again, _ := tt.e.Slots(context.Background(), &tt.state, h)
			if !reflect.DeepEqual(got, again) {
				t.Errorf("the same history picked different slots: %+v then %+v", got, again)
			}
		})
	}
}

func distinctParents(slots []Slot) int {
	seen := map[string]bool{}
	for _, s := range slots {
		seen[s.Parent()] = true
	}
	return len(seen)
}

func TestElitesSettings(t *testing.T) {
	if got := Check(Elites, Settings{NumTopKernels: 1, NumBottlenecks: 1, NumInspirations: -1}); len(got) != 1 ||
		!strings.Contains(got[0], "num_inspirations is -1") {
		t.Errorf("check: %v", got)
	}
	if got := Check(Elites, Settings{NumTopKernels: 2, NumBottlenecks: 1, NumInspirations: 2}); got != nil {
		t.Errorf("valid settings: %v", got)
	}
	s, err := New(Elites, Settings{NumTopKernels: 2, NumBottlenecks: 3, NumInspirations: 2}, nil)
	if err != nil || s.Name() != Elites || s.Directions() != 3 || !NeedsLLM(Elites) {
		t.Errorf("New: %v %v", s, err)
	}
}
