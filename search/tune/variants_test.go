package tune

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lit makes a knob of the literal text that follows the unique string
// before in src ("" = text itself must be unique).
func lit(t *testing.T, src, before, text string, id string, kind Kind, value int) Knob {
	t.Helper()
	if strings.Count(src, before+text) != 1 {
		t.Fatalf("%q is not unique in %q", before+text, src)
	}
	off := strings.Index(src, before+text) + len(before)
	line := strings.Count(src[:off], "\n") + 1
	return Knob{ID: id, Name: id, Kind: kind, Value: value, Site: SiteLaunch,
		Span: Span{Line: line, Offset: off, End: off + len(text)}}
}

func labels(vs []Variant) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Label
	}
	return out
}

func TestValues(t *testing.T) {
	tests := []struct {
		k    Knob
		want []int
	}{
		{Knob{Kind: KindBlock, Value: 1024}, []int{16, 32, 64, 128, 256, 512, 2048, 4096, 8192}},
		{Knob{Kind: KindBlock, Value: 8, Min: 8}, []int{16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192}},
		{Knob{Kind: KindBlock, Value: 4096, Min: 4096}, []int{8192}},
		{Knob{Kind: KindWarps, Value: 4}, []int{1, 2, 8, 16}},
		{Knob{Kind: KindWarps, Value: 32}, []int{1, 2, 4, 8, 16}},
		{Knob{Kind: KindStages, Value: 3}, []int{1, 2, 4, 5}},
		{Knob{Kind: KindGroup, Value: 8}, []int{1, 2, 4, 16, 32}},
		{Knob{Kind: "other", Value: 8}, []int{}},
	}
	for _, tt := range tests {
		if got := Values(tt.k); !slices.Equal(got, tt.want) {
			t.Errorf("Values(%s %d min %d) = %v, want %v", tt.k.Kind, tt.k.Value, tt.k.Min, got, tt.want)
		}
	}
}

func TestVariantsOrder(t *testing.T) {
	src := "k[(n // 1024,)](x, BLOCK=1024, num_warps=4, num_stages=2)\n"
	knobs := []Knob{
		lit(t, src, "BLOCK=", "1024", "BLOCK", KindBlock, 1024),
		lit(t, src, "num_warps=", "4", "num_warps", KindWarps, 4),
		lit(t, src, "num_stages=", "2", "num_stages", KindStages, 2),
	}
	knobs[0].Linked = []Span{lit(t, src, "n // ", "1024", "", KindBlock, 1024).Span}
	for i := range knobs {
		knobs[i].Kernel = "k"
	}
	vs, err := Variants(src, knobs, 16)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		// One step, up first, in knob order.
		"BLOCK=2048", "num_warps=8", "num_stages=3", "BLOCK=512", "num_warps=2", "num_stages=1",
		// Two steps.
		"BLOCK=4096", "num_warps=16", "num_stages=4", "BLOCK=256", "num_warps=1",
		// Pairs: a block and num_warps moving together first.
		"BLOCK=2048 num_warps=8", "BLOCK=512 num_warps=2",
		// Then pairs moving both up, then one up.
		"BLOCK=2048 num_stages=3", "num_warps=8 num_stages=3", "BLOCK=512 num_warps=8",
	}
	if diff := cmp.Diff(want, labels(vs)); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if got, want := vs[0].Source, "k[(n // 2048,)](x, BLOCK=2048, num_warps=4, num_stages=2)\n"; got != want {
		t.Errorf("linked grid literal: got %q, want %q", got, want)
	}
	if got := vs[11].Changes; !slices.Equal(got, []Change{{"BLOCK", 1024, 2048}, {"num_warps", 4, 8}}) {
		t.Errorf("changes of %q: %v", vs[11].Label, got)
	}
	all, err := Variants(src, knobs, 0)
	if err != nil {
		t.Fatal(err)
	}
	// 9 blocks + 4 warps + 4 stages singles; pairs of moves at most 2 steps.
	if len(all) <= 17 || len(all) > 17+4*4+4*4+4*4 {
		t.Errorf("all variants: %d", len(all))
	}
	seen := map[string]bool{src: true}
	for _, v := range all {
		if seen[v.Source] {
			t.Errorf("%q: duplicate source", v.Label)
		}
		seen[v.Source] = true
	}
}

func TestVariantsEdgeCases(t *testing.T) {
	t.Run("duplicate knobs give one variant per source", func(t *testing.T) {
		src := "k[(1,)](x, num_warps=4)\n"
		a := lit(t, src, "num_warps=", "4", "a", KindWarps, 4)
		b := a
		b.ID = "b"
		vs, err := Variants(src, []Knob{a, b}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a=8", "a=2", "a=16", "a=1"}, labels(vs)); diff != "" {
			t.Errorf("labels (-want +got):\n%s", diff)
		}
	})
	t.Run("knobs sharing a literal are not paired", func(t *testing.T) {
		src := "g = (n // 256,)\nk[g](x, BLOCK=256)\nk[g](y, BLOCK=256)\n"
		a := lit(t, src, "x, BLOCK=", "256", "BLOCK@L2", KindBlock, 256)
		b := lit(t, src, "y, BLOCK=", "256", "BLOCK@L3", KindBlock, 256)
		shared := lit(t, src, "n // ", "256", "", KindBlock, 256).Span
		a.Linked, b.Linked = []Span{shared}, []Span{shared}
		vs, err := Variants(src, []Knob{a, b}, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vs {
			if len(v.Changes) != 1 {
				t.Errorf("%q: two knobs writing one literal", v.Label)
			}
		}
		if len(vs) != 2*9 {
			t.Errorf("got %d variants, want 18", len(vs))
		}
	})
	t.Run("implicit knobs insert text, two at one point", func(t *testing.T) {
		src := "k[(1,)](x, y)\n"
		off := strings.Index(src, ")\n")
		w := Knob{ID: "num_warps", Name: "num_warps", Kind: KindWarps, Value: 4, Site: SiteImplicit,
			Insert: ", num_warps=", Span: Span{Line: 1, Offset: off, End: off}}
		s := Knob{ID: "num_stages", Name: "num_stages", Kind: KindStages, Value: 3, Site: SiteImplicit,
			Insert: ", num_stages=", Span: Span{Line: 1, Offset: off, End: off}}
		got, err := Apply(src, []Knob{w, s}, []Change{{"num_warps", 4, 8}, {"num_stages", 3, 2}})
		if err != nil {
			t.Fatal(err)
		}
		if want := "k[(1,)](x, y, num_warps=8, num_stages=2)\n"; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("stale knobs", func(t *testing.T) {
		src := "k[(1,)](x, num_warps=4)\n"
		k := lit(t, src, "num_warps=", "4", "num_warps", KindWarps, 4)
		k.Value = 8
		if _, err := Variants(src, []Knob{k}, 0); !errors.Is(err, ErrSpan) {
			t.Errorf("value not at span: got %v, want ErrSpan", err)
		}
		k.Value, k.Span.End = 4, 99
		if _, err := Variants(src, []Knob{k}, 0); !errors.Is(err, ErrSpan) {
			t.Errorf("span out of range: got %v, want ErrSpan", err)
		}
	})
	t.Run("unknown knob", func(t *testing.T) {
		src := "k[(1,)](x, num_warps=4)\n"
		k := lit(t, src, "num_warps=", "4", "num_warps", KindWarps, 4)
		if _, err := Apply(src, []Knob{k}, []Change{{"BLOCK", 1, 2}}); !errors.Is(err, ErrUnknownKnob) {
			t.Errorf("got %v, want ErrUnknownKnob", err)
		}
	})
	t.Run("python literal forms", func(t *testing.T) {
		src := "k[(1,)](x, BLOCK=0x400, BLOCK_N=1_024)\n"
		a := lit(t, src, "", "0x400", "BLOCK", KindBlock, 1024)
		b := lit(t, src, "", "1_024", "BLOCK_N", KindBlock, 1024)
		vs, err := Variants(src, []Knob{a, b}, 1)
		if err != nil {
			t.Fatal(err)
		}
		if want := "k[(1,)](x, BLOCK=2048, BLOCK_N=1_024)\n"; len(vs) != 1 || vs[0].Source != want {
			t.Errorf("got %+v, want one variant %q", vs, want)
		}
	})
}

// TestVariantsRoundTrip finds the knobs of real kernels, writes variants and
// finds the knobs of each variant again: the changed knobs hold their new
// values, the others are untouched.
func TestVariantsRoundTrip(t *testing.T) {
	f := finder(t)
	files, err := filepath.Glob(filepath.Join("..", "..", "examples", "*", "input.py"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join("testdata", "several.py"), filepath.Join("testdata", "scopes.py"))
	ctx := context.Background()
	for _, path := range files {
		t.Run(filepath.Base(filepath.Dir(path))+"/"+filepath.Base(path), func(t *testing.T) {
			src := readFile(t, path)
			knobs, err := f.Knobs(ctx, src)
			if err != nil {
				t.Fatal(err)
			}
			if len(knobs) == 0 {
				t.Fatal("no knobs")
			}
			vs, err := Variants(src, knobs, 8)
			if err != nil {
				t.Fatal(err)
			}
			if len(vs) != 8 {
				t.Fatalf("got %d variants, want 8", len(vs))
			}
			for _, v := range vs {
				again, err := f.Knobs(ctx, v.Source)
				if err != nil {
					t.Fatalf("%s: %v", v.Label, err)
				}
				if diff := cmp.Diff(values(knobs, v.Changes), values(again, nil)); diff != "" {
					t.Errorf("%s: knob values after the edit (-want +got):\n%s", v.Label, diff)
				}
			}
		})
	}
}

// values lists the knobs' values by name and site, with changes applied (an
// implicit knob that is written becomes a launch keyword).
func values(knobs []Knob, changes []Change) map[string][]int {
	out := map[string][]int{}
	for _, k := range knobs {
		val, site := k.Value, k.Site
		for _, c := range changes {
			if c.Knob == k.ID {
				val = c.To
				if site == SiteImplicit {
					site = SiteLaunch
				}
			}
		}
		key := k.Name + "/" + string(site)
		out[key] = append(out[key], val)
	}
	return out
}
