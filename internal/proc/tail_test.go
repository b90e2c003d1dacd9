package proc

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestTailKeepsTheEnd(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   string
	}{
		{"small writes", []string{"0123", "4567", "89ab"}, "456789ab"},
		{"one write larger than the tail", []string{"01", "0123456789"}, "23456789"},
		{"under the limit", []string{"ab", "c"}, "abc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewTail(8)
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", s, n, err)
				}
			}
			if got := w.String(); got != tt.want {
				t.Errorf("tail %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastLines(t *testing.T) {
	quoted := func(l string) bool { return len(l) > 0 && l[0] == '"' }
	tests := []struct {
		name string
		in   string
		n    int
		skip func(string) bool
		want string
	}{
		{"the end", "a\nb\nc\n\n", 2, nil, "b\nc"},
		{"fewer than n", "a\nb", 5, nil, "a\nb"},
		{"skipped lines do not count", "a\n\"1\",\"2\"\nb\n\"3\"\n", 2, quoted, "a\nb"},
		{"everything skipped", "\"1\"\n", 3, quoted, ""},
		{"empty", "", 3, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LastLines(tt.in, tt.n, tt.skip); got != tt.want {
				t.Errorf("LastLines = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStderrSinkKeepsAFile(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("KAGENT_WORKER_STDERR", dir)
	tail := NewTail(64)
	w, done := StderrSink(tail, "worker")
	if _, err := w.Write([]byte("stack of a stuck worker\n")); err != nil {
		t.Fatal(err)
	}
	done()
	files, _ := filepath.Glob(filepath.Join(dir, "worker-*.log"))
	if len(files) != 1 {
		t.Fatalf("files %v, want one worker log", files)
	}
	b, _ := os.ReadFile(files[0])
	if string(b) != "stack of a stuck worker\n" || tail.String() != string(b) {
		t.Fatalf("file %q, tail %q", b, tail.String())
	}
	t.Setenv("KAGENT_WORKER_STDERR", "")
	if w, _ := StderrSink(tail, "worker"); w != io.Writer(tail) {
		t.Fatal("without KAGENT_WORKER_STDERR the sink is the tail alone")
	}
}
