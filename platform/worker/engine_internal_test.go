package worker

import (
	"slices"
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

// TestMissingChecks: a pass counts only with every check passed or skipped;
// a verdict from a harness whose verification was cut short lacks some.
func TestMissingChecks(t *testing.T) {
	var all []platform.Check
	for _, name := range passChecks {
		all = append(all, platform.Check{Name: name, Passed: true})
	}
	if m := missingChecks(all); len(m) != 0 {
		t.Fatalf("complete verdict: missing %v", m)
	}
	partial := slices.Clone(all[:4])                                                                  // static, import, entry, tamper
	partial = append(partial, platform.Check{Name: "user_test", Skipped: true, Reason: "no test.py"}) // a skip counts
	m := missingChecks(partial)
	if len(m) != len(passChecks)-5 || !slices.Contains(m, "correctness") || slices.Contains(m, "user_test") {
		t.Fatalf("partial verdict: missing %v", m)
	}
	failed := slices.Clone(all)
	failed[4].Passed = false
	if m := missingChecks(failed); !slices.Equal(m, []string{failed[4].Name}) {
		t.Fatalf("a failed check in a pass: missing %v", m)
	}
}
