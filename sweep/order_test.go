package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// numberedSource is a level-1 folder of problems whose ids sort differently
// as strings ("1", "10", "100", "11", "2") and as numbers.
func numberedSource(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	lv := filepath.Join(src, "level1")
	if err := os.MkdirAll(lv, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"100_E.py", "11_D.py", "10_C.py", "2_B.py", "1_A.py"} {
		writeTestFile(t, lv, f)
	}
	return src
}

// objectKeys lists the keys of the JSON object b (or of its member at path)
// in the order the file holds them.
func objectKeys(t *testing.T, b []byte, path ...string) []string {
	t.Helper()
	for _, p := range path {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		b = m[p]
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object: %v %v", tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestOutputsListProblemsByNumericID: results.json, eval_results.json, the
// baseline files, the report's tables and status list problems 1, 2, 10,
// 11, 100 in that order, not as strings sort them (1, 10, 100, 11, 2).
func TestOutputsListProblemsByNumericID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sweep")
	if _, err := Run(context.Background(), Options{Dir: dir, Source: numberedSource(t), Level: 1, Strategy: "greedy",
		Runner: &fakeRunner{}, Workers: 3}); err != nil {
		t.Fatal(err)
	}
	wantIDs := []int{1, 2, 10, 11, 100}
	wantKeys := []string{"1", "2", "10", "11", "100"}

	res, err := ReadResults(filepath.Join(dir, ResultsFile))
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, r := range res.Results {
		got = append(got, r.ID)
	}
	if !slices.Equal(got, wantIDs) || !slices.Equal(res.Problems, wantIDs) || !slices.Equal(res.Sweep.ids(), wantIDs) {
		t.Errorf("results.json: results %v, problems %v, manifest %v; want %v", got, res.Problems, res.Sweep.ids(), wantIDs)
	}
	// The file itself, not only ReadResults (which sorts what it reads).
	var raw struct {
		Results []struct{ ID int } `json:"results"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, ResultsFile)), &raw); err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, r := range raw.Results {
		got = append(got, r.ID)
	}
	if !slices.Equal(got, wantIDs) {
		t.Errorf("results.json holds results %v, want %v", got, wantIDs)
	}

	if keys := objectKeys(t, readFile(t, filepath.Join(dir, EvalResultsFile))); !slices.Equal(keys, wantKeys) {
		t.Errorf("eval_results.json keys %v, want %v", keys, wantKeys)
	}
	// Problems 3-divisible fail in fakeRunner; none here, so every one has baselines.
	wantFiles := []string{"1_A.py", "2_B.py", "10_C.py", "11_D.py", "100_E.py"}
	for _, f := range []string{BaselineEagerFile, BaselineCompileFile} {
		if keys := objectKeys(t, readFile(t, filepath.Join(dir, f)), "level1"); !slices.Equal(keys, wantFiles) {
			t.Errorf("%s keys %v, want %v", f, keys, wantFiles)
		}
	}

	md := string(readFile(t, filepath.Join(dir, ReportFile)))
	last := -1
	for _, id := range wantKeys {
		i := strings.Index(md, "\n| "+id+" | ")
		if i < 0 || i < last {
			t.Errorf("report: row of problem %s at %d, after %d:\n%s", id, i, last, md)
		}
		last = i
	}

	rep, err := ReadStatus(dir)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, p := range rep.Problems {
		got = append(got, p.Problem.ID)
	}
	if !slices.Equal(got, wantIDs) {
		t.Errorf("status lists %v, want %v", got, wantIDs)
	}
}

// TestReadResultsSortsByID: a results file whose lists are out of order
// (written by hand, or by another tool) is read in id order.
func TestReadResultsSortsByID(t *testing.T) {
	m := Manifest{Format: FormatManifest, Level: 1, Selection: "all", Strategy: "greedy",
		Problems: []Problem{{ID: 10, Name: "C", File: "10_C.py"}, {ID: 2, Name: "B", File: "2_B.py"}, {ID: 1, Name: "A", File: "1_A.py"}}}
	f := Results{Format: FormatResults, Sweep: m, Problems: []int{10, 2, 1},
		Results: []ProblemResult{{ID: 10, Status: StatusDone}, {ID: 1, Status: StatusDone}, {ID: 2, Status: StatusFailed}}}
	path := filepath.Join(t.TempDir(), ResultsFile)
	if err := writeJSON(path, f); err != nil {
		t.Fatal(err)
	}
	r, err := ReadResults(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, x := range r.Results {
		got = append(got, x.ID)
	}
	if want := []int{1, 2, 10}; !slices.Equal(got, want) || !slices.Equal(r.Problems, want) || !slices.Equal(r.Sweep.ids(), want) {
		t.Errorf("results %v, problems %v, manifest %v; want %v each", got, r.Problems, r.Sweep.ids(), want)
	}
}

func TestObjectKeepsOrder(t *testing.T) {
	for _, tc := range []struct {
		o    object
		want string
	}{
		{nil, `{}`},
		{object{{"2", 1}, {"10", []int{1}}, {"1", "x"}}, `{"2":1,"10":[1],"1":"x"}`},
		{object{{"a<b", object{{"z", true}, {"y", nil}}}}, `{"a\u003cb":{"z":true,"y":null}}`},
	} {
		b, err := json.Marshal(tc.o)
		if err != nil || string(b) != tc.want {
			t.Errorf("Marshal = %s, %v; want %s", b, err, tc.want)
		}
	}
}
