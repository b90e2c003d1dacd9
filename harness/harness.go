// Package harness embeds kagent's Python harness and installs it into a
// content-addressed cache directory, so users never copy Python files around.
package harness

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kagent-kernels/kagent/internal/atomicfile"
)

//go:embed kagent_harness/*.py
var files embed.FS

// Package is the harness's Python package name.
const Package = "kagent_harness"

var (
	hashOnce sync.Once
	hashHex  string
)

// Hash is the content hash of the embedded harness (12 hex digits).
func Hash() string {
	hashOnce.Do(func() {
		h := sha256.New()
		names := Files()
		for _, n := range names {
			b, _ := files.ReadFile(n)
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(b))
			h.Write(b)
		}
		hashHex = hex.EncodeToString(h.Sum(nil))[:12]
	})
	return hashHex
}

// Files lists the embedded files, sorted.
func Files() []string {
	var names []string
	_ = fs.WalkDir(files, Package, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	return names
}

// Install writes the harness under cacheDir/harness-<hash> unless it is already
// there, and returns that directory: put it on PYTHONPATH to import the package.
// Concurrent installs are safe: each writes a private temporary directory and
// renames it into place. An existing copy is checked on every call: a file
// that differs from the embedded one is written again, and anything else in
// the directory (compiled caches, added modules) is removed, so that code
// which ran as the same user (a candidate kernel) cannot leave a changed
// harness for the processes started after it.
func Install(cacheDir string) (string, error) {
	dir := filepath.Join(cacheDir, "harness-"+Hash())
	if _, err := os.Stat(filepath.Join(dir, Package, ".complete")); err == nil {
		if err := repair(dir); err != nil {
			return "", fmt.Errorf("install harness: %w", err)
		}
		return dir, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("install harness: %w", err)
	}
	tmp, err := os.MkdirTemp(cacheDir, ".harness-tmp-")
	if err != nil {
		return "", fmt.Errorf("install harness: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := writeFiles(tmp); err != nil {
		return "", fmt.Errorf("install harness: %w", err)
	}
	if err := os.WriteFile(filepath.Join(tmp, Package, ".complete"), []byte(Hash()), 0o644); err != nil {
		return "", fmt.Errorf("install harness: %w", err)
	}
	err = os.Rename(tmp, dir)
	if err != nil {
		if _, statErr := os.Stat(filepath.Join(dir, Package, ".complete")); statErr != nil {
			// A partial copy left by an interrupted install: replace it.
			_ = os.RemoveAll(dir)
			err = os.Rename(tmp, dir)
		}
	}
	if err != nil {
		// Another process won the race; its copy is identical.
		if _, statErr := os.Stat(filepath.Join(dir, Package, ".complete")); statErr == nil {
			return dir, nil
		}
		return "", fmt.Errorf("install harness: %w", err)
	}
	return dir, nil
}

// Write writes a fresh copy of the harness into dir, which must not exist
// yet, and returns dir (for PYTHONPATH). A worker gets its own copy this way:
// no other process can have changed it.
func Write(dir string) (string, error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", fmt.Errorf("write harness: %w", err)
	}
	if err := writeFiles(dir); err != nil {
		return "", fmt.Errorf("write harness: %w", err)
	}
	return dir, nil
}

// writeFiles writes every embedded file under dir.
func writeFiles(dir string) error {
	for _, n := range Files() {
		b, err := files.ReadFile(n)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(n))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// repair makes an installed copy equal to the embedded harness: changed or
// missing files are written again (atomically), other entries removed.
func repair(dir string) error {
	want := map[string][]byte{filepath.Join(Package, ".complete"): []byte(Hash())}
	for _, n := range Files() {
		b, err := files.ReadFile(n)
		if err != nil {
			return err
		}
		want[filepath.FromSlash(n)] = b
	}
	var extra []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case rel == "." || d.IsDir() && rel == Package:
			return nil
		case strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp-"):
			return nil // another repair's file on its way into place
		case d.IsDir():
			extra = append(extra, p)
			return filepath.SkipDir
		case want[rel] == nil || !d.Type().IsRegular():
			extra = append(extra, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range extra {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	for rel, b := range want {
		p := filepath.Join(dir, rel)
		if have, err := os.ReadFile(p); err == nil && bytes.Equal(have, b) {
			continue
		}
		if err := atomicfile.Write(p, b, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// CacheDir is kagent's cache directory: $KAGENT_CACHE_DIR, else the user cache
// dir's kagent folder, else a folder under the temporary directory.
func CacheDir() string {
	if d := os.Getenv("KAGENT_CACHE_DIR"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "kagent")
	}
	return filepath.Join(os.TempDir(), "kagent-cache")
}

// ReadFile returns the embedded source of one harness file (a name such as
// "launch.py"), for code that must run from what the binary holds rather
// than from a copy on disk.
func ReadFile(name string) ([]byte, error) {
	return files.ReadFile(Package + "/" + name)
}
