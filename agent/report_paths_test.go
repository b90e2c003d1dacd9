package agent

import "testing"

// TestReportPathsRelative: the report's text names files under the run dir
// relative to it and other files under the kernel dir relative to that.
func TestReportPathsRelative(t *testing.T) {
	rel := relative("/work/rmsnorm/.kagent/runs/r1", "/work/rmsnorm")
	for in, want := range map[string]string{
		"import: /work/rmsnorm/.kagent/runs/r1/round001/cand2/kernel.py:14: NameError": "import: round001/cand2/kernel.py:14: NameError",
		"problem.py changed: /work/rmsnorm/problem.py":                                 "problem.py changed: problem.py",
		"see /work/rmsnorm2/input.py and /tmp/x.py":                                    "see /work/rmsnorm2/input.py and /tmp/x.py",
	} {
		if got := rel(in); got != want {
			t.Errorf("rel(%q)\n got %q\nwant %q", in, got, want)
		}
	}
}
