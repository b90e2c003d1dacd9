package search_test

import (
	"context"
	"fmt"

	"github.com/kagent-kernels/kagent/search"
)

// The strategy of the package doc's "Adding a strategy", complete. In
// kagent it would be search/widest.go, in package search; here it is
// registered under another name, by the search package's tests only.

// Widest is the strategy's registered name.
const Widest = "example_widest"

func init() {
	search.Register(search.Spec{Name: Widest, NeedsLLM: true, Searches: true,
		Summary: "rewrite the best kernel along num_bottlenecks directions a round",
		Check: func(s search.Settings) []string {
			if s.NumBottlenecks < 1 {
				return []string{fmt.Sprintf("strategy_config.num_bottlenecks is %d: %s needs 1 or more", s.NumBottlenecks, Widest)}
			}
			return nil
		},
		New: func(s search.Settings, _ search.Tuner) (search.Strategy, error) {
			return widest{m: max(1, s.NumBottlenecks)}, nil
		}})
}

// widest rewrites the best kernel along m directions each round.
type widest struct{ m int }

func (widest) Name() string      { return Widest }
func (w widest) Directions() int { return w.m }

// Slots gives the best kernel one slot per direction.
func (w widest) Slots(_ context.Context, s *search.State, _ search.History) ([]search.Slot, error) {
	out := make([]search.Slot, w.m)
	for i := range out {
		out[i] = search.Slot{Index: i + 1, Parents: []string{s.BestID}, Rank: i + 1}
	}
	return out, nil
}

// Update counts the rounds without a promotion (the plateau stop rule).
func (widest) Update(s *search.State, out search.Outcome, _ search.History) { search.Plateau(s, out) }

// Interface guards
var _ search.Strategy = widest{}

// The registry builds the new strategy by name, checks its settings, and the
// loop asks it for slots.
func Example_addingAStrategy() {
	fmt.Println(search.Check(Widest, search.Settings{}))
	st, err := search.New(Widest, search.Settings{NumBottlenecks: 2}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	slots, _ := st.Slots(context.Background(), &search.State{BestID: "r1c2"}, search.History{})
	for _, s := range slots {
		fmt.Printf("slot %d: rewrite %s along direction %d\n", s.Index, s.Parent(), s.Rank)
	}
	fmt.Println("needs an LLM:", search.NeedsLLM(Widest))
	// Output:
	// [strategy_config.num_bottlenecks is 0: example_widest needs 1 or more]
	// slot 1: rewrite r1c2 along direction 1
	// slot 2: rewrite r1c2 along direction 2
	// needs an LLM: true
}
