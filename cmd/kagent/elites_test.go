package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/store"
)

// TestDuplicatesAndInspirationsOnCPU runs two rounds of the rmsnorm example
// on the cpu platform with transcript-elites, whose second rewrite differs
// from the first only in comments, docstrings and local names (the same
// Triton IR, compiled without a GPU) and whose fourth repeats the first with a comment added (the same
// normalised source). Slots run one at a time, but in no set order, so
// either of round 1's candidates may be the first of the pair. The repeat
// is recorded as a duplicate of the earlier candidate and never timed, the
// report and summary count both kinds, a rewrite is promoted, and under
// elites the round-2 prompts show an elite of another cell. beam_search
// replays the same transcript alike (add it to the list to check; it adds
// as long again as elites).
func TestDuplicatesAndInspirationsOnCPU(t *testing.T) {
	for _, strategy := range []string{"elites"} {
		t.Run(strategy, func(t *testing.T) {
			dir := tritonKernelDir(t, "rmsnorm")
			r := run(t, dir, "optimize", "--kernel-dir", dir, "--platform", "cpu", "--strategy", strategy,
				"--llm-replay", filepath.Join(dir, "transcript-elites"), "--llm-replay-match", "purpose",
				"--max-rounds", "2", "--num-workers", "1")
			if r.code != ExitOK {
				t.Fatalf("exit %d, want %d (a verified improvement)\n%s\n%s", r.code, ExitOK, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stdout, "duplicates skipped: 2 (by source 1 / by compiled code 1)") {
				t.Errorf("the summary does not count the duplicates:\n%s", r.stdout)
			}
			_, report, _ := strings.Cut(r.stdout, "\nreport: ")
			report, _, _ = strings.Cut(report, "\n")
			runDir := filepath.Dir(report)
			cs := storedCandidates(t, filepath.Join(dir, ".kagent", "history.db"), filepath.Base(runDir))

			var firstOfPair string
			for _, id := range []string{"r1c1", "r1c2"} {
				if c := cs[id]; c.Status.Measured() {
					firstOfPair = id
				}
			}
			if firstOfPair == "" {
				t.Fatalf("neither of round 1's candidates was timed: %+v", cs)
			}
			byCode, bySource := 0, 0
			for id, c := range cs {
				if c.Verdict == nil || c.Verdict.Failure != "duplicate" {
					continue
				}
				if c.Timing != nil || !strings.Contains(c.Verdict.Reason, firstOfPair) {
					t.Errorf("%s: duplicate timed (%v) or not of %s: %s", id, c.Timing, firstOfPair, c.Verdict.Reason)
				}
				if c.Verdict.Checks[0].Name == "fingerprint" {
					byCode++
					if c.Round != 1 || !strings.HasPrefix(c.Verdict.Checks[0].Reason, "ttir ") {
						t.Errorf("%s: duplicate by code in round %d, checks %+v", id, c.Round, c.Verdict.Checks)
					}
				} else {
					bySource++
				}
			}
			if byCode != 1 || bySource != 1 {
				t.Errorf("%d duplicates by code and %d by source, want 1 and 1", byCode, bySource)
			}
			rep, err := os.ReadFile(filepath.Join(runDir, "report.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(rep), `"by_source": 1`) || !strings.Contains(string(rep), `"by_code": 1`) {
				t.Errorf("report.json does not count the duplicates")
			}
			if best := bestOf(t, runDir); best == "input" || !strings.HasPrefix(best, "r") {
				t.Errorf("best kernel %q: no rewrite was promoted", best)
			}
			if b, err := os.ReadFile(filepath.Join(runDir, "round000", "input", "fingerprint.json")); err != nil ||
				!strings.Contains(string(b), `"method": "ttir"`) {
				t.Errorf("the input's fingerprint: %s %v", b, err)
			}
			prompts, _ := filepath.Glob(filepath.Join(runDir, "round002", "*", "optimize.prompt.md"))
			shown := 0
			for _, p := range prompts {
				b, _ := os.ReadFile(p)
				if strings.Contains(string(b), "## Other correct kernels for ideas") {
					shown++
				}
			}
			if want := map[string]int{"elites": 2, "beam_search": 0}[strategy]; shown != want {
				t.Errorf("%d of round 2's %d prompts show other kernels, want %d", shown, len(prompts), want)
			}
		})
	}
}

// storedCandidates reads a run's candidates from its history.
func storedCandidates(t *testing.T, db, runID string) map[string]store.Candidate {
	t.Helper()
	st, err := store.Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cs, err := st.Candidates(context.Background(), runID, store.CandidateFilter{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]store.Candidate{}
	for _, c := range cs {
		out[c.ID] = c
	}
	return out
}

// bestOf is the id of the best kernel in a run's report.json ("" for none).
func bestOf(t *testing.T, runDir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(runDir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Best *struct {
			ID string `json:"id"`
		} `json:"best"`
	}
	if err := json.Unmarshal(b, &rep); err != nil || rep.Best == nil {
		return ""
	}
	return rep.Best.ID
}
