package sweep

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Problem is one problem file of a sweep.
type Problem struct {
	// ID is the number of the file name's "<id>_" prefix (KernelBench's
	// problem id), or, for a file without one, its place after the highest
	// such id in name order.
	ID int `json:"id"`
	// Name is the file name without the id prefix and ".py" ("ReLU").
	Name string `json:"name"`
	// File is the file name ("19_ReLU.py").
	File string `json:"file"`
	// Path is the file on this machine (not recorded: shards may see the
	// problems at other paths).
	Path string `json:"-"`
}

// Key names the problem in the sweep dir: the file name without ".py"
// ("19_ReLU").
func (p Problem) Key() string { return strings.TrimSuffix(p.File, ".py") }

var problemFile = regexp.MustCompile(`^(\d+)_(.+)\.py$`)

// FindProblems resolves the folder of a sweep's problems and lists them by
// id. With level L > 0, root may be a KernelBench checkout (root/KernelBench/
// levelL), its KernelBench folder (root/levelL) or the level folder itself;
// with level 0 root is any folder of problem files. Files whose names start
// with "_" or "." are skipped.
func FindProblems(root string, level int) (string, []Problem, error) {
	dir, err := problemDir(root, level)
	if err != nil {
		return "", nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", nil, fmt.Errorf("list problems: %w", err)
	}
	var out []Problem
	var unnumbered []string
	seen := map[int]string{}
	maxID := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".py") || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".") {
			continue
		}
		m := problemFile.FindStringSubmatch(name)
		if m == nil {
			unnumbered = append(unnumbered, name)
			continue
		}
		id, err := strconv.Atoi(m[1])
		if err != nil || id < 1 {
			unnumbered = append(unnumbered, name)
			continue
		}
		if other, dup := seen[id]; dup {
			return "", nil, fmt.Errorf("list problems: %w: %s and %s in %s have the same id %d", ErrSelection, other, name, dir, id)
		}
		seen[id] = name
		maxID = max(maxID, id)
		out = append(out, Problem{ID: id, Name: m[2], File: name, Path: filepath.Join(dir, name)})
	}
	slices.Sort(unnumbered)
	for i, name := range unnumbered {
		out = append(out, Problem{ID: maxID + 1 + i, Name: strings.TrimSuffix(name, ".py"), File: name, Path: filepath.Join(dir, name)})
	}
	slices.SortFunc(out, func(a, b Problem) int { return a.ID - b.ID })
	if len(out) == 0 {
		return "", nil, fmt.Errorf("list problems: %w: no .py problem files in %s", ErrNoProblems, dir)
	}
	return dir, out, nil
}

// problemDir finds the folder that holds the problem files.
func problemDir(root string, level int) (string, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return "", fmt.Errorf("list problems: %w", err)
	}
	st, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("list problems: %w: %s does not exist", ErrNoProblems, root)
	case err != nil:
		return "", fmt.Errorf("list problems: %w", err)
	case !st.IsDir():
		return "", fmt.Errorf("list problems: %w: %s is not a folder", ErrNoProblems, root)
	}
	if level <= 0 {
		return abs, nil
	}
	lv := "level" + strconv.Itoa(level)
	for _, d := range []string{filepath.Join(abs, "KernelBench", lv), filepath.Join(abs, lv)} {
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			return d, nil
		}
	}
	if filepath.Base(abs) == lv {
		return abs, nil
	}
	return "", fmt.Errorf("list problems: %w: no %s folder in %s (looked for %s/KernelBench/%s and %s/%s)",
		ErrNoProblems, lv, root, root, lv, root, lv)
}

// Select keeps the problems the selection names, by id.
func Select(problems []Problem, sel Selection) []Problem {
	var out []Problem
	for _, p := range problems {
		if sel.Contains(p.ID) {
			out = append(out, p)
		}
	}
	return out
}
