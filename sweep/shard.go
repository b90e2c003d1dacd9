package sweep

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Shard is the Index-th (from 0) of Count deterministic slices of a sweep's
// problems.
type Shard struct {
	Index int `json:"index"`
	Count int `json:"count"`
}

// ParseShard reads "i/n" (0 <= i < n).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "/")
	i, erri := strconv.Atoi(strings.TrimSpace(a))
	n, errn := strconv.Atoi(strings.TrimSpace(b))
	switch {
	case !ok || erri != nil || errn != nil:
		return Shard{}, fmt.Errorf("%w: shard %q: want i/n, e.g. 0/4", ErrSelection, s)
	case n < 1:
		return Shard{}, fmt.Errorf("%w: shard %q: n must be 1 or more", ErrSelection, s)
	case i < 0 || i >= n:
		return Shard{}, fmt.Errorf("%w: shard %q: i must be 0 to %d", ErrSelection, s, n-1)
	}
	return Shard{Index: i, Count: n}, nil
}

// String is "i/n".
func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// FileName is the shard's results file in the sweep dir: shard-i-of-n.json.
func (s Shard) FileName() string { return fmt.Sprintf("shard-%d-of-%d.json", s.Index, s.Count) }

// storeName is the shard's SQLite history in the sweep dir.
func (s Shard) storeName() string { return fmt.Sprintf("history-shard-%d-of-%d.db", s.Index, s.Count) }

// Of returns the shard's slice of problems (sorted by id): the k-th problem
// goes to shard k mod n, so every shard gets a spread of ids and the slices
// of 0/n ... n-1/n partition the problems.
func (s Shard) Of(problems []Problem) []Problem {
	var out []Problem
	for k, p := range problems {
		if k%s.Count == s.Index {
			out = append(out, p)
		}
	}
	return out
}

var shardFile = regexp.MustCompile(`^shard-(\d+)-of-(\d+)\.json$`)

// parseShardFile reads a shard results file name.
func parseShardFile(name string) (Shard, bool) {
	m := shardFile.FindStringSubmatch(name)
	if m == nil {
		return Shard{}, false
	}
	sh, err := ParseShard(m[1] + "/" + m[2])
	return sh, err == nil
}
