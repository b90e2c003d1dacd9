package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kagent-kernels/kagent/agent/llm"
)

// TestGPUTranscriptMatchesProblems: the scripted transcript of
// testdata/gpu was written from the current problems and kernels (run
// make_transcript.py after editing either), so that replay serves each
// problem its own kernel.
func TestGPUTranscriptMatchesProblems(t *testing.T) {
	dir := filepath.Join("testdata", "gpu")
	files, err := filepath.Glob(filepath.Join(dir, "transcript", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcript: %v", err)
	}
	type exchange struct {
		Request struct {
			Purpose  string `json:"purpose"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		} `json:"request"`
		Response struct {
			Text string `json:"text"`
		} `json:"response"`
	}
	generated := map[string]string{} // problem source -> reply kernel
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var e exchange
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if e.Request.Purpose != string(llm.PurposeGenerate) || len(e.Request.Messages) == 0 {
			continue
		}
		code, err := llm.ExtractPython(e.Response.Text)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		generated[e.Request.Messages[0].Content] = code
	}
	problems, _ := filepath.Glob(filepath.Join(dir, "level1", "*.py"))
	if len(problems) < 6 {
		t.Fatalf("%d GPU problems, want at least 6", len(problems))
	}
	for _, p := range problems {
		key := strings.TrimSuffix(filepath.Base(p), ".py")
		src, _ := os.ReadFile(p)
		kernel, _ := os.ReadFile(filepath.Join(dir, "kernels", key+".v1.py"))
		found := false
		for prompt, code := range generated {
			if strings.Contains(prompt, strings.TrimSpace(string(src))) {
				found = true
				if strings.TrimSpace(code) != strings.TrimSpace(string(kernel)) {
					t.Errorf("%s: the transcript's generated kernel is not kernels/%s.v1.py: run make_transcript.py", key, key)
				}
			}
		}
		if !found {
			t.Errorf("%s: no generate exchange holds the problem's current source: run make_transcript.py", key)
		}
	}
}
