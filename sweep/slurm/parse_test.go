package slurm

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// summary renders records as "index:STATE:exit" sorted by index, "?" for an
// unknown exit code.
func summary(recs []record) string {
	byIndex := map[int]string{}
	max := -1
	for _, r := range recs {
		exit := "?"
		if r.ExitCode != nil {
			exit = fmt.Sprint(*r.ExitCode)
		}
		byIndex[r.Index] = fmt.Sprintf("%d:%s:%s", r.Index, r.State, exit)
		if r.Index > max {
			max = r.Index
		}
	}
	var parts []string
	for i := 0; i <= max; i++ {
		if s, ok := byIndex[i]; ok {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " ")
}

// The fixtures were recorded on Debian's Slurm 22.05.8 (one-node cluster,
// slurmdbd on MariaDB for sacct): job 7 is an array 0-3%1 whose task 1 exits
// 3, seen while task 0 ran and after all ended; job 11 the same, active.
// sacct-0.0.40.json is written in the form of Slurm 23.11's data_parser.
func TestParsers(t *testing.T) {
	tests := []struct {
		file  string
		parse func([]byte) ([]record, error)
		want  string
	}{
		{"sacct-0.0.38-active.json", func(b []byte) ([]record, error) { return parseSacctJSON(b, "7", 4) },
			"0:RUNNING:? 1:PENDING:? 2:PENDING:? 3:PENDING:?"},
		// 22.05 reports return code 0 for the failed task: unknown, not 0.
		{"sacct-0.0.38-done.json", func(b []byte) ([]record, error) { return parseSacctJSON(b, "7", 4) },
			"0:COMPLETED:0 1:FAILED:? 2:COMPLETED:0 3:COMPLETED:0"},
		{"sacct-0.0.40.json", func(b []byte) ([]record, error) { return parseSacctJSON(b, "20", 6) },
			"0:COMPLETED:0 1:FAILED:2 2:CANCELLED:137 3:RUNNING:? 4:PENDING:? 5:PENDING:?"},
		{"sacct-parsable2-done.txt", func(b []byte) ([]record, error) { return parseSacctParsable(b, "7", 4) },
			"0:COMPLETED:0 1:FAILED:3 2:COMPLETED:0 3:COMPLETED:0"},
		{"sacct-parsable2-active.txt", func(b []byte) ([]record, error) { return parseSacctParsable(b, "11", 3) },
			"0:RUNNING:? 1:PENDING:? 2:PENDING:?"},
		{"squeue-active.txt", func(b []byte) ([]record, error) { return parseSqueue(b, 3) },
			"0:RUNNING:? 1:PENDING:? 2:PENDING:?"},
		{"scontrol-active.txt", func(b []byte) ([]record, error) { return parseScontrol(b, "11", 3) },
			"0:RUNNING:? 1:PENDING:? 2:PENDING:?"},
		{"scontrol-done.txt", func(b []byte) ([]record, error) { return parseScontrol(b, "7", 4) },
			"0:COMPLETED:0 1:FAILED:3 2:COMPLETED:0 3:COMPLETED:0"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			recs, err := tt.parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(recs); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestParseIndices(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
		err  bool
	}{
		{"3", 8, "[3]", false},
		{"0-3", 8, "[0 1 2 3]", false},
		{"[1-2%1]", 8, "[1 2]", false},
		{"1,4-5", 8, "[1 4 5]", false},
		{"0-9:3", 8, "[0 3 6]", false},
		{"6-12", 8, "[6 7]", false},
		{"x", 8, "", true},
		{"1-y", 8, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := parseIndices(tt.in, tt.n)
			if (err != nil) != tt.err {
				t.Fatalf("err %v, want error %v", err, tt.err)
			}
			if !tt.err && fmt.Sprint(got) != tt.want {
				t.Errorf("got %v, want %s", got, tt.want)
			}
		})
	}
}

func TestParseBitmap(t *testing.T) {
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"E", 4, "[1 2 3]"},
		{"1", 4, "[0]"},
		{"10", 8, "[4]"},
		{"FF", 6, "[0 1 2 3 4 5]"},
	}
	for _, tt := range tests {
		got, err := parseBitmap(tt.in, tt.n)
		if err != nil || fmt.Sprint(got) != tt.want {
			t.Errorf("parseBitmap(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if _, err := parseBitmap("G", 4); err == nil {
		t.Error("parseBitmap(G): no error")
	}
}

func TestExitCodeOf(t *testing.T) {
	for in, want := range map[string]string{"0:0": "0", "3:0": "3", "0:15": "143", "x": "nil"} {
		got := "nil"
		if c := exitCodeOf(in); c != nil {
			got = fmt.Sprint(*c)
		}
		if got != want {
			t.Errorf("exitCodeOf(%q) = %s, want %s", in, got, want)
		}
	}
}
