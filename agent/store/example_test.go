package store_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/platform"
)

// A loop records each step before starting the next; after a crash,
// ResumeState says what is left.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "kagent-store")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	s, err := store.Open(ctx, filepath.Join(dir, "history.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()

	run, err := s.CreateRun(ctx, store.Run{ID: "demo", KernelDir: "examples/rmsnorm", Strategy: "greedy", Platform: "cuda"})
	if err != nil {
		log.Fatal(err)
	}
	steps := []func() error{
		func() error { return s.StartRound(ctx, run.ID, 0) },
		func() error {
			_, err := s.AddCandidate(ctx, store.Candidate{RunID: run.ID, ID: run.InputID, Source: "@triton.jit\ndef k(): pass\n"})
			return err
		},
		func() error {
			_, err := s.UpdateCandidate(ctx, run.ID, run.InputID, store.Update{Status: store.StatusVerified,
				Verdict: &platform.Verdict{Passed: true}})
			return err
		},
		func() error {
			_, err := s.UpdateCandidate(ctx, run.ID, run.InputID, store.Update{Status: store.StatusTimed,
				Timing: &platform.Timing{MedianMS: 4.2, N: 10}})
			return err
		},
		func() error {
			return s.SetBaseline(ctx, run.ID, platform.TargetEager, platform.Timing{MedianMS: 6.3, N: 10})
		},
		// ... the process dies here, before profiling the input.
	}
	for _, step := range steps {
		if err := step(); err != nil {
			log.Fatal(err)
		}
	}

	st, err := s.ResumeState(ctx, run.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("open round:", st.Open.Index)
	fmt.Println("to profile:", len(st.Profile), st.Profile[0].ID, st.Profile[0].Timing.MedianMS, "ms")
	fmt.Println("to time:", st.MissingBaselines)
	fmt.Println("best so far:", st.Best.ID)
	// Output:
	// open round: 0
	// to profile: 1 input 4.2 ms
	// to time: [compile]
	// best so far: input
}
