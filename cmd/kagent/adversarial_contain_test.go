package main

// The surroundings of an adversarial case: what its setup directives and
// snippet includes build around its kernel dir, and the probes that find its
// side effects afterwards (changed files, a secret copied out, processes left
// alive).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
)

var includeRE = regexp.MustCompile(`(?m)^# @@include ([a-z_]+)@@$`)

func expandIncludes(t *testing.T, text string) (string, error) {
	var err error
	out := includeRE.ReplaceAllStringFunc(text, func(m string) string {
		name := includeRE.FindStringSubmatch(m)[1]
		b, e := os.ReadFile(filepath.Join(advRoot(t), "snippets", name+".py"))
		if e != nil {
			err = e
			return m
		}
		return "# --- snippet " + name + " ---\n" + string(b) + "# --- end of snippet " + name + " ---"
	})
	return out, err
}

// advSetup applies one setup directive: what git cannot hold (FIFOs,
// symlinks, sparse files) or what needs the case's paths.
func advSetup(s []string, dirs map[string]string, secret string, conns *atomic.Int32) (func(), error) {
	kd := dirs["kdir"]
	expand := strings.NewReplacer("@@HOST@@", dirs["host"], "@@SECRET@@", secret, "@@OUTSIDE@@", dirs["outside"])
	switch {
	case s[0] == "fifo" && len(s) == 2:
		p := filepath.Join(kd, s[1])
		os.Remove(p)
		return nil, syscall.Mkfifo(p, 0o644)
	case s[0] == "move" && len(s) == 2:
		// The file moves out of the kernel dir; a symlink takes its place.
		p, q := filepath.Join(kd, s[1]), filepath.Join(dirs["host"], s[1])
		if err := os.Rename(p, q); err != nil {
			return nil, err
		}
		return nil, os.Symlink(q, p)
	case s[0] == "symlink" && len(s) == 3:
		p := filepath.Join(kd, s[1])
		os.Remove(p)
		return nil, os.Symlink(expand.Replace(s[2]), p)
	case s[0] == "sparse" && len(s) == 3:
		n, err := strconv.ParseInt(s[2], 10, 64)
		if err != nil {
			return nil, err
		}
		f, err := os.Create(filepath.Join(kd, s[1]))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return nil, f.Truncate(n)
	case s[0] == "hostfile" && len(s) >= 3:
		return nil, os.WriteFile(filepath.Join(dirs["host"], s[1]), []byte(expand.Replace(strings.Join(s[2:], " "))+"\n"), 0o644)
	case s[0] == "unixsock" && len(s) == 2:
		ln, err := net.Listen("unix", filepath.Join(dirs["host"], s[1]))
		if err != nil {
			return nil, err
		}
		go acceptCount(ln, conns)
		return func() { ln.Close() }, nil
	case s[0] == "tcp" && len(s) == 1:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		port := ln.Addr().(*net.TCPAddr).Port
		if err := os.WriteFile(filepath.Join(dirs["host"], "port"), []byte(strconv.Itoa(port)), 0o644); err != nil {
			ln.Close()
			return nil, err
		}
		go acceptCount(ln, conns)
		return func() { ln.Close() }, nil
	}
	return nil, fmt.Errorf("unknown setup directive")
}

func acceptCount(ln net.Listener, conns *atomic.Int32) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		conns.Add(1)
		c.Close()
	}
}

// snapshotDir maps each entry of dir (but .kagent) to its type and content hash.
func snapshotDir(dir string) map[string]string {
	snap := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		if d.IsDir() && (rel == ".kagent" || rel == "__pycache__") {
			return filepath.SkipDir
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			snap[rel] = "symlink " + target
		case d.Type().IsRegular():
			info, _ := d.Info()
			if info != nil && info.Size() > 64<<20 {
				snap[rel] = fmt.Sprintf("file of %d bytes", info.Size())
				return nil
			}
			b, _ := os.ReadFile(p)
			sum := sha256.Sum256(b)
			snap[rel] = hex.EncodeToString(sum[:])
		case d.IsDir():
			snap[rel] = "dir"
		default:
			snap[rel] = d.Type().String()
		}
		return nil
	})
	return snap
}

func diffSnapshots(a, b map[string]string) string {
	var diffs []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			diffs = append(diffs, k+" removed")
		} else if v != w {
			diffs = append(diffs, k+" modified")
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diffs = append(diffs, k+" added")
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, ", ")
}

// fileContaining returns a regular file under dir holding needle ("" if
// none). skipSetup leaves out the files the case's setup wrote.
func fileContaining(dir, needle string, skipSetup bool) string {
	if skipSetup {
		return ""
	}
	found := ""
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 256<<20 {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(needle)) {
			found = p
		}
		return nil
	})
	return found
}

// listDir lists dir's entries but those named ignore* (when ignore is set).
func listDir(dir, ignore string) []string {
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		if ignore == "" || !strings.HasPrefix(e.Name(), ignore) {
			names = append(names, e.Name())
		}
	}
	return names
}

// survivors lists the live processes whose environment holds the case's
// TMPDIR (kagent's workers inherit it), after kagent exited.
func survivors(tmp string) []int {
	needle := []byte("TMPDIR=" + tmp + "\x00")
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(env, needle) {
			continue
		}
		if stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue
			}
		}
		pids = append(pids, pid)
	}
	return pids
}
