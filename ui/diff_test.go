package ui

import (
	"strings"
	"testing"
)

func TestUnifiedDiff(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"change", "a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c"},
		{"add at end", "a\n", "a\nb\n", "@@ -1,1 +1,2 @@\n a\n+b"},
		{"from empty", "", "x\n", "@@ -0,0 +1,1 @@\n+x"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "0\n2\n3\n4\n5\n6\n7\n8\n9\n11\n",
			"@@ -1,2 +1,2 @@\n-1\n+0\n 2\n@@ -9,2 +9,2 @@\n 9\n-10\n+11"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var lines []string
			for _, l := range unifiedDiff(tt.a, tt.b, 1) {
				lines = append(lines, l.String())
			}
			if got := strings.Join(lines, "\n"); got != tt.want {
				t.Errorf("diff:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}
