package sweep

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestParseSelection(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    string // canonical form; "" when an error is wanted
		has     []int
		hasNot  []int
		errPart string
	}{
		{in: "1-20,36", want: "1-20,36", has: []int{1, 7, 20, 36}, hasNot: []int{0, 21, 35, 37}},
		{in: "36, 1-20", want: "1-20,36", has: []int{36}},
		{in: "3", want: "3", has: []int{3}, hasNot: []int{2, 4}},
		{in: "5-5", want: "5", has: []int{5}},
		{in: "1-3,2-6,8", want: "1-6,8", has: []int{6, 8}, hasNot: []int{7}},
		{in: "1-3,4-6", want: "1-6"},
		{in: "", want: "all", has: []int{1, 999}},
		{in: "all", want: "all", has: []int{42}},
		{in: " ALL ", want: "all"},
		{in: "1-x", errPart: `"1-x" is not a number`},
		{in: "1,,2", errPart: "an empty item"},
		{in: "5-2", errPart: `range "5-2" runs backwards (write 2-5)`},
		{in: "0-3", errPart: "is not a problem id"},
		{in: "-3", errPart: "lacks a number"},
		{in: "1-", errPart: "lacks a number"},
		{in: "1-2-3", errPart: "is not a number"},
		{in: "a", errPart: `"a" is not a number`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			sel, err := ParseSelection(tc.in)
			if tc.errPart != "" {
				if err == nil {
					t.Fatalf("ParseSelection(%q) = %v, want an error", tc.in, sel)
				}
				if !errors.Is(err, ErrSelection) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), tc.errPart) {
					t.Errorf("error %q: want one line wrapping ErrSelection, containing %q", err, tc.errPart)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseSelection(%q): %v", tc.in, err)
			}
			if got := sel.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			for _, id := range tc.has {
				if !sel.Contains(id) {
					t.Errorf("%q does not contain %d", tc.in, id)
				}
			}
			for _, id := range tc.hasNot {
				if sel.Contains(id) {
					t.Errorf("%q contains %d", tc.in, id)
				}
			}
		})
	}
}

func TestSelectionMissing(t *testing.T) {
	sel, _ := ParseSelection("1-5,9")
	if got := sel.Missing([]int{1, 2, 4, 5, 6}, 10); !slices.Equal(got, []int{3, 9}) {
		t.Errorf("Missing = %v", got)
	}
	if got := (Selection{}).Missing([]int{1}, 10); got != nil {
		t.Errorf("all: Missing = %v", got)
	}
}

func TestFindProblems(t *testing.T) {
	for _, tc := range []struct {
		name  string
		root  string
		level int
		ids   []int
		err   error
	}{
		{"checkout level", testSource, 1, []int{1, 2, 3, 4, 5, 6}, nil},
		{"level folder", testSource + "/level1", 1, []int{1, 2, 3, 4, 5, 6}, nil},
		{"any folder", testSource + "/level1", 0, []int{1, 2, 3, 4, 5, 6}, nil},
		{"no such level", testSource, 2, nil, ErrNoProblems},
		{"no such folder", "testdata/nope", 1, nil, ErrNoProblems},
		{"no problem files", "testdata", 0, nil, ErrNoProblems},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ps, err := FindProblems(tc.root, tc.level)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err %v, want %v", err, tc.err)
			}
			if got := problemIDs(ps); tc.err == nil && !slices.Equal(got, tc.ids) {
				t.Errorf("ids %v, want %v", got, tc.ids)
			}
		})
	}
	_, ps, _ := FindProblems(testSource, 1)
	if p := ps[2]; p.Name != "ReLU" || p.File != "3_ReLU.py" || p.Key() != "3_ReLU" {
		t.Errorf("problem 3: %+v", p)
	}
}

func TestFindProblemsUnnumbered(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"7_Seven.py", "zeta.py", "alpha.py", "_helper.py", "notes.txt"} {
		writeTestFile(t, dir, f)
	}
	_, ps, err := FindProblems(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range ps {
		got = append(got, p.File+"="+strings.TrimSpace(p.Name)+"#"+itoa(p.ID))
	}
	want := []string{"7_Seven.py=Seven#7", "alpha.py=alpha#8", "zeta.py=zeta#9"}
	if !slices.Equal(got, want) {
		t.Errorf("problems %v, want %v", got, want)
	}
	writeTestFile(t, dir, "07_Again.py")
	if _, _, err := FindProblems(dir, 0); !errors.Is(err, ErrSelection) {
		t.Errorf("two files with id 7: %v, want ErrSelection", err)
	}
}
