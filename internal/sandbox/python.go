package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// pythonScript prints where a Python finds its code.
const pythonScript = `import json, os, sys, sysconfig
paths = sysconfig.get_paths()
print(json.dumps({
    "prefixes": [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix],
    "executable": sys.executable,
    "path": [p for p in sys.path if p],
    "sysconfig": [paths.get(k, "") for k in ("stdlib", "platstdlib", "purelib", "platlib", "include", "platinclude")],
}))`

// systemRoots are prefixes too broad to bind whole; their Python
// directories are listed one by one instead.
var systemRoots = []string{"/", "/usr", "/usr/local", "/opt"}

// libraryPaths hold the shared libraries a Python and its extensions load,
// and the dynamic loader's configuration (not the rest of /etc).
var libraryPaths = []string{
	"/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime",
}

// PythonPaths returns the interpreter's own executable (sys.executable:
// what to run inside the sandbox, where a launcher such as a pyenv shim, a
// script that finds the interpreter, cannot run) and lists the existing host
// paths a Python interpreter needs read-only to run: sys.prefix and
// sys.base_prefix (or, when a prefix is a system root such as /usr, its
// library directories from sysconfig), every sys.path entry, the interpreter
// itself, the system library directories (/usr/lib, /lib*, /usr/local/lib)
// and the dynamic loader's files from /etc. Paths below another listed path
// are left out.
//
// An interpreter's answer is kept for the life of the process (asking costs
// a Python start-up, and it does not change while kagent runs); a failure
// is not kept.
func PythonPaths(python string) (string, []string, error) {
	key, err := exec.LookPath(python)
	if err == nil {
		key, err = filepath.Abs(key)
	}
	if err != nil {
		return askPythonPaths(python)
	}
	if v, ok := pythonPathsSeen.Load(key); ok {
		r := v.(pythonPathsAnswer)
		return r.exe, slices.Clone(r.paths), nil
	}
	exe, paths, err := askPythonPaths(python)
	if err == nil {
		pythonPathsSeen.Store(key, pythonPathsAnswer{exe, slices.Clone(paths)})
	}
	return exe, paths, err
}

// pythonPathsSeen holds PythonPaths's answers, by the interpreter's path.
var pythonPathsSeen sync.Map

type pythonPathsAnswer struct {
	exe   string
	paths []string
}

func askPythonPaths(python string) (string, []string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-c", pythonScript).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", nil, fmt.Errorf("ask %s for its paths: %w", python, err)
	}
	var info struct {
		Prefixes   []string `json:"prefixes"`
		Executable string   `json:"executable"`
		Path       []string `json:"path"`
		Sysconfig  []string `json:"sysconfig"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return "", nil, fmt.Errorf("read %s's paths: %w", python, err)
	}
	var paths []string
	for _, p := range info.Prefixes {
		if !slices.Contains(systemRoots, filepath.Clean(p)) {
			paths = append(paths, p)
		}
	}
	paths = append(paths, info.Path...)
	paths = append(paths, info.Sysconfig...)
	if info.Executable != "" {
		paths = append(paths, info.Executable)
	}
	if abs, err := filepath.Abs(python); err == nil && strings.Contains(python, "/") {
		paths = append(paths, abs)
	}
	paths = append(paths, libraryPaths...)
	exe := info.Executable
	if exe == "" || !filepath.IsAbs(exe) {
		exe = python
	}
	return exe, minimalPaths(paths), nil
}

// minimalPaths keeps the existing absolute paths, cleaned, without
// duplicates or paths below another kept one.
func minimalPaths(paths []string) []string {
	var clean []string
	for _, p := range paths {
		if p == "" || !filepath.IsAbs(p) {
			continue
		}
		p = filepath.Clean(p)
		if _, err := os.Stat(p); err != nil {
			continue
		}
		clean = append(clean, p)
	}
	slices.Sort(clean)
	clean = slices.Compact(clean)
	var out []string
	for _, p := range clean {
		covered := false
		for _, q := range out {
			if q != "/" && strings.HasPrefix(p, q+"/") {
				covered = true
				break
			}
		}
		if !covered && p != "/" {
			out = append(out, p)
		}
	}
	return out
}
