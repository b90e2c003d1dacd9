package tune

import (
	"cmp"
	"fmt"
	"slices"
)

// Space bounds. A point of the space is one value for every knob that is
// not a triton.Config entry; the space is the cartesian product of the
// knobs' SpaceValues, less the points that break a static constraint:
//
//   - the tile of a kernel (the product of its two largest block
//     parameters, each at the largest value given to it: a matmul's
//     BLOCK_M x BLOCK_N output tile, a 1-D kernel's BLOCK) holds at most
//     MaxTileElems elements, a 256x256 accumulator, about what the
//     registers of a thread block hold;
//   - a kernel's threads (num_warps x 32) have at least one tile element
//     each, and at most MaxElemsPerThread (more spills registers).
//
// A kernel without a num_warps knob counts Triton's default of 4 warps.
const (
	// SpaceReach is how far a knob's values reach either side of its
	// current value: doublings for blocks, groups, splits and num_warps,
	// units for num_stages.
	SpaceReach = 2
	// MaxTileElems bounds the elements of one kernel's tile.
	MaxTileElems = 1 << 16
	// MaxElemsPerThread bounds the tile elements per thread.
	MaxElemsPerThread = 1024
	// MaxPoints bounds the points enumerated before constraints and the
	// cap: past it the reach shrinks to 1, then enumeration stops there.
	MaxPoints      = 1 << 18
	defaultWarps   = 4
	threadsPerWarp = 32
)

// SpaceValues is a knob's values in the space, its current value included,
// ascending: the values of Values within reach of the current one.
func SpaceValues(k Knob, reach int) []int {
	out := []int{k.Value}
	for _, v := range Values(k) {
		if distance(k, v) <= reach {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// point is one value index per product knob.
type point struct {
	idx  []int
	dist int
	ups  int // knobs moved up (bigger tiles, more warps)
}

// Space lists the variants of the search space of source, at most max
// (max <= 0: all): first one variant per entry of each autotune configs
// list (the list rewritten to hold that entry alone, which pins it), then
// the points of the knobs' cartesian product that meet the constraints,
// nearest to the current values first (the sum of the knobs' steps), then
// those moving more knobs up (bigger tiles, more warps), then in knob order
// by value. triton.Config entries are pinned, never varied.
// The order depends only on the source and its knobs, so a resumed run
// enumerates the same space.
func Space(source string, found Found, max int) ([]Variant, error) {
	knobs := found.Knobs
	if err := check(source, knobs); err != nil {
		return nil, fmt.Errorf("tune space: %w", err)
	}
	seen := map[string]bool{source: true}
	var out []Variant
	full := func() bool { return max > 0 && len(out) >= max }
	for _, a := range found.Autotune {
		for i, c := range a.Configs {
			if full() {
				return out, nil
			}
			if a.List.Offset > c.Offset || c.End > a.List.End || a.List.End > len(source) {
				return nil, fmt.Errorf("tune space: %w: config %d of %s outside its list", ErrSpan, i, a.Kernel)
			}
			src := source[:a.List.Offset] + "[" + source[c.Offset:c.End] + "]" + source[a.List.End:]
			if seen[src] {
				continue
			}
			seen[src] = true
			out = append(out, Variant{Label: fmt.Sprintf("pin %s.configs[%d]", a.Kernel, i), Source: src})
		}
	}
	var free []int // the knobs of the product
	for i, k := range knobs {
		if k.Site != SiteConfig {
			free = append(free, i)
		}
	}
	if len(free) == 0 {
		return out, nil
	}
	ids := knobIDs(knobs)
	reach := SpaceReach
	vals := spaceValues(knobs, free, reach)
	for reach > 1 && size(vals) > MaxPoints {
		reach--
		vals = spaceValues(knobs, free, reach)
	}
	points := enumerate(knobs, free, vals)
	for _, p := range points {
		if full() {
			break
		}
		var changes []Change
		for j, ki := range free {
			if v := vals[j][p.idx[j]]; v != knobs[ki].Value {
				changes = append(changes, Change{Knob: ids[ki], From: knobs[ki].Value, To: v})
			}
		}
		if len(changes) == 0 {
			continue
		}
		src, err := apply(source, knobs, ids, changes)
		if err != nil || seen[src] {
			continue // knobs sharing a literal; or the same source
		}
		seen[src] = true
		out = append(out, Variant{Label: Label(changes), Changes: changes, Source: src})
	}
	return out, nil
}

func spaceValues(knobs []Knob, free []int, reach int) [][]int {
	vals := make([][]int, len(free))
	for j, ki := range free {
		vals[j] = SpaceValues(knobs[ki], reach)
	}
	return vals
}

func size(vals [][]int) float64 {
	n := 1.0
	for _, v := range vals {
		n *= float64(len(v))
	}
	return n
}

// enumerate lists the product's points that meet the constraints, at most
// MaxPoints of them visited, nearest first.
func enumerate(knobs []Knob, free []int, vals [][]int) []point {
	var out []point
	idx := make([]int, len(free))
	values := make([]int, len(knobs))
	for i, k := range knobs {
		values[i] = k.Value
	}
	for visited := 0; visited < MaxPoints; visited++ {
		dist, ups := 0, 0
		for j, ki := range free {
			values[ki] = vals[j][idx[j]]
			dist += distance(knobs[ki], values[ki])
			if values[ki] > knobs[ki].Value {
				ups++
			}
		}
		if Feasible(knobs, values) {
			out = append(out, point{idx: slices.Clone(idx), dist: dist, ups: ups})
		}
		j := len(idx) - 1
		for ; j >= 0; j-- {
			if idx[j]++; idx[j] < len(vals[j]) {
				break
			}
			idx[j] = 0
		}
		if j < 0 {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b point) int { return cmp.Or(cmp.Compare(a.dist, b.dist), cmp.Compare(b.ups, a.ups)) })
	return out
}

// Feasible reports whether values (one per knob, in knob order) meet the
// space's constraints (see the Space bounds).
func Feasible(knobs []Knob, values []int) bool {
	type kernel struct {
		blocks map[string]int
		warps  int
	}
	ks := map[string]*kernel{}
	get := func(name string) *kernel {
		if ks[name] == nil {
			ks[name] = &kernel{blocks: map[string]int{}}
		}
		return ks[name]
	}
	for i, k := range knobs {
		if k.Site == SiteConfig {
			continue
		}
		switch k.Kind {
		case KindBlock:
			kr := get(k.Kernel)
			kr.blocks[k.Param] = max(kr.blocks[k.Param], values[i])
		case KindWarps:
			kr := get(k.Kernel)
			kr.warps = max(kr.warps, values[i])
		}
	}
	for _, kr := range ks {
		if len(kr.blocks) == 0 {
			continue
		}
		var bs []int
		for _, b := range kr.blocks {
			bs = append(bs, b)
		}
		slices.Sort(bs)
		slices.Reverse(bs)
		tile := float64(bs[0])
		if len(bs) > 1 {
			tile *= float64(bs[1])
		}
		threads := float64(cmp.Or(kr.warps, defaultWarps) * threadsPerWarp)
		if tile > MaxTileElems || tile < threads || tile/threads > MaxElemsPerThread {
			return false
		}
	}
	return true
}
