package agent

import (
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/platform"
)

// TestInputRejectedAdvice: an input kernel out of memory is not blamed
// alone (the problem's size with the checks' working memory may be the
// cause, and a smaller --size the fix); any other failure sends the user to
// the kernel.
func TestInputRejectedAdvice(t *testing.T) {
	oom := (&InputRejectedError{Verdict: platform.Verdict{Failure: "oom", Reason: "CUDA out of memory"}}).Error()
	for _, want := range []string{"oom: CUDA out of memory", "problem at this size", "--size"} {
		if !strings.Contains(oom, want) {
			t.Errorf("oom: %q lacks %q", oom, want)
		}
	}
	wrong := (&InputRejectedError{Verdict: platform.Verdict{Failure: "correctness", Reason: "mismatch"}}).Error()
	if !strings.Contains(wrong, "fix the input kernel") || strings.Contains(wrong, "--size") {
		t.Errorf("correctness: %q", wrong)
	}
}
