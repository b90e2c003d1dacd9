package platform

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func fakeFactory(Config) (Platform, error) { return nil, nil }

func mustPanic(t *testing.T, name string, f func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", name)
		}
	}()
	f()
}

func TestRegisterMisuse(t *testing.T) {
	Register("test-once", fakeFactory)
	mustPanic(t, "duplicate", func() { Register("test-once", fakeFactory) })
	mustPanic(t, "empty name", func() { Register("", fakeFactory) })
	mustPanic(t, "nil factory", func() { Register("test-nil", nil) })
}

func TestLookup(t *testing.T) {
	Register("test-lookup", fakeFactory)
	if _, err := Lookup("test-lookup"); err != nil {
		t.Fatalf("Lookup registered: %v", err)
	}
	_, err := Lookup("no-such-platform")
	if !errors.Is(err, ErrUnknown) || !strings.HasSuffix(err.Error(), "(forgotten import?)") {
		t.Fatalf("Lookup unknown = %v", err)
	}
	if !strings.Contains(err.Error(), "test-lookup") {
		t.Errorf("error does not list registered names: %v", err)
	}
}

func TestNamesSorted(t *testing.T) {
	Register("test-zz", fakeFactory)
	Register("test-aa", fakeFactory)
	names := Names()
	for i := 1; i < len(names); i++ {
		if names[i-1] > names[i] {
			t.Fatalf("Names() not sorted: %v", names)
		}
	}
}

type fakeInfo struct{ os.FileInfo }

func TestDetect(t *testing.T) {
	none := func(string) (string, error) { return "", errors.New("not found") }
	noFile := func(string) (os.FileInfo, error) { return nil, os.ErrNotExist }
	cases := []struct {
		name  string
		probe Probe
		want  string
	}{
		{"nvidia-smi", Probe{LookPath: func(n string) (string, error) {
			if n == "nvidia-smi" {
				return "/usr/bin/nvidia-smi", nil
			}
			return none(n)
		}, Stat: noFile, Getenv: func(string) string { return "" }}, "cuda"},
		{"kfd", Probe{LookPath: none, Stat: func(p string) (os.FileInfo, error) {
			if p == "/dev/kfd" {
				return fakeInfo{}, nil
			}
			return noFile(p)
		}, Getenv: func(string) string { return "" }}, "rocm"},
		{"xpu-smi", Probe{LookPath: func(n string) (string, error) {
			if n == "xpu-smi" {
				return "/usr/bin/xpu-smi", nil
			}
			return none(n)
		}, Stat: noFile, Getenv: func(string) string { return "" }}, "xpu"},
	}
	for _, tc := range cases {
		got, err := Detect(tc.probe)
		if err != nil || got != tc.want {
			t.Errorf("%s: Detect = %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	_, err := Detect(Probe{LookPath: none, Stat: noFile, Getenv: func(string) string { return "" }})
	if !errors.Is(err, ErrNoPlatform) || !strings.Contains(err.Error(), "--platform cpu") || !strings.Contains(err.Error(), "rocminfo") {
		t.Fatalf("Detect on a bare machine = %v", err)
	}
}
