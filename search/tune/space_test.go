package tune

import (
	"fmt"
	"slices"
	"testing"
)

func TestFeasible(t *testing.T) {
	matmul := []Knob{
		{ID: "BLOCK_M", Param: "BLOCK_M", Kernel: "mm", Kind: KindBlock},
		{ID: "BLOCK_N", Param: "BLOCK_N", Kernel: "mm", Kind: KindBlock},
		{ID: "BLOCK_K", Param: "BLOCK_K", Kernel: "mm", Kind: KindBlock},
		{ID: "num_warps", Param: "num_warps", Kernel: "mm", Kind: KindWarps},
	}
	tests := []struct {
		values []int
		want   bool
	}{
		{values: []int{128, 128, 64, 8}, want: true},   // a 128x128 tile, 64 elements per thread
		{values: []int{256, 256, 32, 8}, want: true},   // 256x256: the tile budget
		{values: []int{512, 256, 32, 16}, want: false}, // over the tile budget
		{values: []int{16, 16, 64, 16}, want: true},    // a 64x16 tile: 2 elements for each of 512 threads
		{values: []int{16, 16, 16, 16}, want: false},   // 256 elements for 512 threads
		{values: []int{256, 256, 64, 1}, want: false},  // 2048 elements per thread: spills
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.values), func(t *testing.T) {
			if got := Feasible(matmul, tt.values); got != tt.want {
				t.Errorf("Feasible(%v) = %v, want %v", tt.values, got, tt.want)
			}
		})
	}
	// A config entry is never constrained (it is pinned, not varied).
	cfg := []Knob{{ID: "c", Param: "BLOCK", Kernel: "k", Kind: KindBlock, Site: SiteConfig}}
	if !Feasible(cfg, []int{1 << 22}) {
		t.Error("a triton.Config entry was constrained")
	}
}

func TestSpaceValues(t *testing.T) {
	tests := []struct {
		knob  Knob
		reach int
		want  []int
	}{
		{knob: Knob{Kind: KindBlock, Value: 64}, reach: 2, want: []int{16, 32, 64, 128, 256}},
		{knob: Knob{Kind: KindBlock, Value: 64, Min: 64}, reach: 2, want: []int{64, 128, 256}},
		{knob: Knob{Kind: KindBlock, Value: 16}, reach: 1, want: []int{16, 32}},
		{knob: Knob{Kind: KindWarps, Value: 4}, reach: 2, want: []int{1, 2, 4, 8, 16}},
		{knob: Knob{Kind: KindStages, Value: 1}, reach: 2, want: []int{1, 2, 3}},
		{knob: Knob{Kind: KindSplit, Value: 1}, reach: 2, want: []int{1, 2, 4}},
		{knob: Knob{Kind: KindBlock, Value: 100}, reach: 1, want: []int{64, 100, 128}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s_%d_reach%d", tt.knob.Kind, tt.knob.Value, tt.reach), func(t *testing.T) {
			if got := SpaceValues(tt.knob, tt.reach); !slices.Equal(got, tt.want) {
				t.Errorf("SpaceValues = %v, want %v", got, tt.want)
			}
		})
	}
}
