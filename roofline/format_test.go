package roofline

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if d := cmp.Diff(string(want), string(got)); d != "" {
		t.Errorf("%s differs (-want +got), run go test -update if intended:\n%s", path, d)
	}
}

func TestWriteTable(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTable(&b, All()); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.golden", b.Bytes())
}

func TestWriteDetail(t *testing.T) {
	for _, name := range []string{"NVIDIA H200", "NVIDIA H100 NVL"} {
		var b bytes.Buffer
		if err := WriteDetail(&b, mustLookup(t, name)); err != nil {
			t.Fatal(err)
		}
		golden(t, "detail_"+normalizeFile(name)+".golden", b.Bytes())
	}
}

func normalizeFile(s string) string {
	out := []byte{}
	for _, tok := range tokens(s) {
		if len(out) > 0 {
			out = append(out, '_')
		}
		out = append(out, tok...)
	}
	return string(out)
}
