// Package tune improves a Triton kernel without an LLM: it finds the kernel
// file's launch and constexpr knobs (block sizes, num_warps, num_stages,
// GROUP_SIZE_M) through the Python AST and proposes edited sources over a
// search space around their current values.
//
// Knobs runs the harness's stdlib-only knobs.py (nothing is imported or
// executed), so it works where torch and triton are not installed. Only
// integer literals are knobs: a computed block such as
// triton.next_power_of_2(n) is left alone, and a literal block that must
// cover a whole reduction only grows. Variants edits the literals byte for
// byte at their spans.
//
// One call of Variants is one step of a hill climb: time the variants, keep
// the fastest, and call Knobs and Variants again on its source (the current
// values, and so the centre of the search, move with it).
package tune

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/harness"
)

// Kind is what a knob controls; it picks the knob's search space.
type Kind string

// Knob kinds.
const (
	KindBlock  Kind = "block"  // a tile size: a power of two in [16, 8192]
	KindWarps  Kind = "warps"  // num_warps: 1, 2, 4, 8, 16
	KindStages Kind = "stages" // num_stages: 1 to 5
	KindGroup  Kind = "group"  // GROUP_SIZE_M and the like: 1 to 32, powers of two
	KindSplit  Kind = "split"  // SPLIT_K and the like: 1 to 16, powers of two
)

// Site is where a knob's literal is written.
type Site string

// Knob sites.
const (
	SiteLaunch    Site = "launch"    // a keyword (or constexpr positional) argument of kernel[grid](...)
	SiteAssign    Site = "assign"    // NAME = 1024, in a function or the module, passed to a launch
	SiteDefault   Site = "default"   // def f(..., BLOCK=1024), passed to a launch
	SiteAttribute Site = "attribute" // self.block = 1024 (or a class attribute), passed to a launch
	SiteConfig    Site = "config"    // an entry of triton.Config({...}, num_warps=.., num_stages=..)
	SiteImplicit  Site = "implicit"  // not passed: Insert + value goes at Span (zero width)
)

// Span locates text in a source. Lines and columns are 1-based, columns count
// bytes, EndCol is exclusive; Offset and End are byte offsets.
type Span struct {
	Line    int `json:"line"`
	Col     int `json:"col"`
	EndLine int `json:"end_line"`
	EndCol  int `json:"end_col"`
	Offset  int `json:"offset"`
	End     int `json:"end"`
}

// Knob is one tunable integer literal of a kernel file.
type Knob struct {
	// ID is unique among the knobs of one source: Name, or Name@L<line> when
	// several knobs share a name. Labels and Changes use it.
	ID string `json:"id"`
	// Name is the identifier in the source: the variable, keyword or config
	// entry ("BLOCK", "num_warps", "_kernel.configs[1].BLOCK_SIZE_M").
	Name string `json:"name"`
	// Param is the launch keyword or kernel parameter the value feeds.
	Param string `json:"param"`
	// Kernel is the kernel the value is launched with ("" when not found in
	// the file).
	Kernel string `json:"kernel,omitempty"`
	Kind   Kind   `json:"kind"`
	Value  int    `json:"value"`
	Site   Site   `json:"site"`
	Span   Span   `json:"span"`
	// Linked are further literals edited together with Span (the same
	// number in the launch grid).
	Linked []Span `json:"linked,omitempty"`
	// Insert is written before the value at an implicit site (", num_warps=").
	Insert string `json:"insert,omitempty"`
	// Min is the smallest value allowed (0: none); set for a block that must
	// cover a whole reduction.
	Min  int    `json:"min,omitempty"`
	Note string `json:"note,omitempty"`
}

// Finder runs knobs.py. The zero value uses python3 and kagent's cache dir.
type Finder struct {
	// Python is the interpreter ("" = python3); any Python 3.8+ will do.
	Python string
	// CacheDir is where the harness is installed ("" = harness.CacheDir()).
	CacheDir string
	// Timeout bounds one run of the script (0 = 30 s).
	Timeout time.Duration
}

// Knobs finds the knobs of a kernel source with Finder{Python: python}.
func Knobs(ctx context.Context, python, source string) ([]Knob, error) {
	return Finder{Python: python}.Knobs(ctx, source)
}

// report is knobs.py's output.
type report struct {
	Error    *string    `json:"error"`
	Line     *int       `json:"line"`
	Knobs    []rawKnob  `json:"knobs"`
	Autotune []Autotune `json:"autotune"`
}

// Autotune is a literal configs list of an @triton.autotune kernel with two
// or more triton.Config entries.
type Autotune struct {
	Kernel  string `json:"kernel"`
	List    Span   `json:"list"`
	Configs []Span `json:"configs"`
}

// Found is what Find reports of a kernel source.
type Found struct {
	Knobs    []Knob
	Autotune []Autotune
}

type rawKnob struct {
	Name   string `json:"name"`
	Param  string `json:"param"`
	Kernel string `json:"kernel"`
	Kind   Kind   `json:"kind"`
	Value  int    `json:"value"`
	Site   Site   `json:"site"`
	Span
	Linked []Span `json:"linked"`
	Insert string `json:"insert"`
	Min    int    `json:"min"`
	Note   string `json:"note"`
}

// Knobs finds the knobs of a kernel source, in source order.
func (f Finder) Knobs(ctx context.Context, source string) ([]Knob, error) {
	found, err := f.Find(ctx, source)
	return found.Knobs, err
}

// Find finds the knobs of a kernel source, in source order, and its
// autotune configs lists.
func (f Finder) Find(ctx context.Context, source string) (Found, error) {
	var rep report
	sc := harness.Script{Name: "knobs.py", Python: f.Python, Isolated: true, Args: []string{"-"},
		Stdin: strings.NewReader(source), Timeout: f.Timeout, CacheDir: f.CacheDir}
	if err := sc.JSON(ctx, &rep); err != nil {
		return Found{}, fmt.Errorf("find knobs: %w", err)
	}
	if rep.Error != nil {
		if rep.Line != nil {
			return Found{}, fmt.Errorf("find knobs: %w: line %d: %s", ErrSyntax, *rep.Line, *rep.Error)
		}
		return Found{}, fmt.Errorf("find knobs: %w: %s", ErrSyntax, *rep.Error)
	}
	knobs := make([]Knob, 0, len(rep.Knobs))
	for _, r := range rep.Knobs {
		knobs = append(knobs, Knob{
			Name: r.Name, Param: r.Param, Kernel: r.Kernel, Kind: r.Kind, Value: r.Value,
			Site: r.Site, Span: r.Span, Linked: r.Linked, Insert: r.Insert, Min: r.Min, Note: r.Note,
		})
	}
	assignIDs(knobs)
	if err := check(source, knobs); err != nil {
		return Found{}, fmt.Errorf("find knobs: %w", err)
	}
	for _, a := range rep.Autotune {
		for _, s := range append([]Span{a.List}, a.Configs...) {
			if s.Offset < 0 || s.End < s.Offset || s.End > len(source) {
				return Found{}, fmt.Errorf("find knobs: %w: autotune list of %s outside the source", ErrSpan, a.Kernel)
			}
		}
	}
	return Found{Knobs: knobs, Autotune: rep.Autotune}, nil
}

// assignIDs sets each knob's ID to its name, qualified by line (then column)
// where names repeat.
func assignIDs(knobs []Knob) {
	count := map[string]int{}
	for _, k := range knobs {
		count[k.Name]++
	}
	byLine := map[string]int{}
	for i := range knobs {
		k := &knobs[i]
		k.ID = k.Name
		if count[k.Name] > 1 {
			k.ID = fmt.Sprintf("%s@L%d", k.Name, k.Span.Line)
			byLine[k.ID]++
		}
	}
	for i := range knobs {
		k := &knobs[i]
		if byLine[k.ID] > 1 {
			k.ID = fmt.Sprintf("%s:%d", k.ID, k.Span.Col)
		}
	}
}

// check verifies that every knob's spans hold its value in source.
func check(source string, knobs []Knob) error {
	for _, k := range knobs {
		spans := append([]Span{k.Span}, k.Linked...)
		for i, s := range spans {
			if s.Offset < 0 || s.End < s.Offset || s.End > len(source) {
				return fmt.Errorf("%w: %s: span %d..%d outside the source (%d bytes)", ErrSpan, k.ID, s.Offset, s.End, len(source))
			}
			if i == 0 && k.Site == SiteImplicit {
				if s.End != s.Offset || k.Insert == "" {
					return fmt.Errorf("%w: %s: implicit knob without an insertion point", ErrSpan, k.ID)
				}
				continue
			}
			text := source[s.Offset:s.End]
			v, err := strconv.ParseInt(text, 0, 64)
			if err != nil || int(v) != k.Value {
				return fmt.Errorf("%w: %s: line %d holds %q, not %d", ErrSpan, k.ID, s.Line, text, k.Value)
			}
		}
	}
	return nil
}
