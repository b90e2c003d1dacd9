package report

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestNoAbsoluteKernelDir: a relative kernel dir is shown as given; an
// absolute one (a caller that did not make it relative) as its base name,
// in report.md (also as the title when there is no name) and report.json.
func TestNoAbsoluteKernelDir(t *testing.T) {
	for _, tc := range []struct{ dir, want string }{
		{"../../..", "../../.."},
		{"/home/u/work/softmax", "softmax"},
	} {
		d := cpuTune()
		d.Name, d.KernelDir = "", tc.dir
		md, err := Markdown(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"# kagent report: " + tc.want + "\n", "| kernel dir | " + tc.want + " |\n"} {
			if !strings.Contains(string(md), want) {
				t.Errorf("kernel dir %s: report.md lacks %q", tc.dir, want)
			}
		}
		js, err := JSON(d)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			KernelDir string `json:"kernel_dir"`
		}
		if err := json.Unmarshal(js, &r); err != nil || r.KernelDir != tc.want {
			t.Errorf("kernel dir %s: report.json kernel_dir %q (%v), want %q", tc.dir, r.KernelDir, err, tc.want)
		}
		if strings.Contains(string(md)+string(js), "/home/u") {
			t.Errorf("kernel dir %s: a report holds the absolute path", tc.dir)
		}
	}
}
