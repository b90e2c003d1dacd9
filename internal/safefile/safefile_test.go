package safefile

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func write(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Repeat("x", size)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readSoon runs Read with a hang guard: a refused file must be refused, not
// block the reader.
func readSoon(t *testing.T, root, name string, limit int64) ([]byte, error) {
	t.Helper()
	type res struct {
		b   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		b, err := Read(root, name, limit)
		ch <- res{b, err}
	}()
	select {
	case r := <-ch:
		return r.b, r.err
	case <-time.After(time.Minute):
		t.Fatalf("Read(%s) blocked", name)
		return nil, nil
	}
}

func TestReadRefusesHostileEntries(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	write(t, filepath.Join(outside, "secret.py"), 10)
	write(t, filepath.Join(dir, "big.py"), 2048)
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.py"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"zero.yaml":    "/dev/zero",
		"outside.py":   filepath.Join(outside, "secret.py"),
		"dotdot.py":    "../" + filepath.Base(outside) + "/secret.py",
		"dangling.py":  filepath.Join(dir, "nothing.py"),
		"loop.py":      "loop.py",
		"folder.py":    outside,
		"tofifo.py":    "fifo.py",
		"sub/above.py": "../../" + filepath.Base(outside) + "/secret.py",
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	// A socket, bound where its path fits (sun_path is 108 bytes).
	sockDir, err := os.MkdirTemp("", "sf")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	l, err := net.Listen("unix", filepath.Join(sockDir, "s.py"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()

	cases := []struct {
		root, name string
		want       string
	}{
		{dir, "fifo.py", "FIFO"},
		{dir, "tofifo.py", "FIFO"},
		{dir, "zero.yaml", "outside"},
		{dir, "outside.py", "outside"},
		{dir, "dotdot.py", "outside"},
		{dir, "sub/above.py", "outside"},
		{dir, "dangling.py", "leads nowhere"},
		{dir, "loop.py", "leads nowhere"},
		{dir, "folder.py", "outside"},
		{dir, "big.py", "over kagent's limit of 1.0 KiB"},
		{dir, "sub", "a folder"},
		{dir, "../x.py", "outside"},
		{sockDir, "s.py", "a socket"},
		{"/dev", "null", "character device"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readSoon(t, tc.root, tc.name, 1024)
			if !errors.Is(err, ErrUnsafe) {
				t.Fatalf("Read = %v, want ErrUnsafe", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.name) {
				t.Errorf("error %q lacks %q or the file's name", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
}

func TestReadAcceptsRegularFilesAndInnerLinks(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "problem.py"), 100)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "k.py"), 7)
	if err := os.Symlink("problem.py", filepath.Join(dir, "link.py")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../problem.py", filepath.Join(dir, "sub", "up.py")); err != nil {
		t.Fatal(err)
	}
	// The folder itself reached through a link is fine.
	alias := filepath.Join(t.TempDir(), "alias")
	if err := os.Symlink(dir, alias); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		root, name string
		size       int
	}{
		{dir, "problem.py", 100}, {dir, "link.py", 100}, {dir, "sub/k.py", 7}, {dir, "sub/up.py", 100},
		{alias, "problem.py", 100}, {alias, "link.py", 100},
	} {
		b, err := readSoon(t, tc.root, tc.name, 100)
		if err != nil || len(b) != tc.size {
			t.Errorf("Read(%s, %s) = %d bytes, %v; want %d bytes", tc.root, tc.name, len(b), err, tc.size)
		}
	}
	if b, err := ReadPath(filepath.Join(dir, "sub", "k.py"), 10); err != nil || len(b) != 7 {
		t.Errorf("ReadPath = %d bytes, %v", len(b), err)
	}
	if _, err := Read(dir, "missing.py", 10); !errors.Is(err, fs.ErrNotExist) || errors.Is(err, ErrUnsafe) {
		t.Errorf("missing file: %v, want fs.ErrNotExist", err)
	}
	if !Exists(dir, "link.py") || Exists(dir, "missing.py") {
		t.Error("Exists is wrong")
	}
}
