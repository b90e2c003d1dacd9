package tune_test

import (
	"fmt"

	"github.com/kagent-kernels/kagent/search/tune"
)

// Variants edits the knobs' literals in place; Knobs (which needs Python)
// would have found these two in the launch line.
func ExampleVariants() {
	src := "kernel[(n // 1024,)](x, y, n, BLOCK=1024, num_warps=4)\n"
	knobs := []tune.Knob{
		{ID: "BLOCK", Name: "BLOCK", Kind: tune.KindBlock, Value: 1024, Site: tune.SiteLaunch,
			Span:   tune.Span{Line: 1, Offset: 36, End: 40},
			Linked: []tune.Span{{Line: 1, Offset: 13, End: 17}}},
		{ID: "num_warps", Name: "num_warps", Kind: tune.KindWarps, Value: 4, Site: tune.SiteLaunch,
			Span: tune.Span{Line: 1, Offset: 52, End: 53}},
	}
	variants, err := tune.Variants(src, knobs, 3)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range variants {
		fmt.Printf("%-12s %s", v.Label, v.Source)
	}
	// Output:
	// BLOCK=2048   kernel[(n // 2048,)](x, y, n, BLOCK=2048, num_warps=4)
	// num_warps=8  kernel[(n // 1024,)](x, y, n, BLOCK=1024, num_warps=8)
	// BLOCK=512    kernel[(n // 512,)](x, y, n, BLOCK=512, num_warps=4)
}
