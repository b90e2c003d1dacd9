package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Selection is a set of problem ids written as ranges: "1-20,36". The zero
// Selection selects every problem.
type Selection struct {
	spans [][2]int // sorted, merged, inclusive
}

// ParseSelection reads a comma-separated list of ids and inclusive ranges
// ("1-20,36", "3", "5-5"); "" and "all" select everything. Ids are positive
// integers; overlapping parts are merged. Errors are one line naming the
// bad part.
func ParseSelection(s string) (Selection, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "all") {
		return Selection{}, nil
	}
	var spans [][2]int
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return Selection{}, fmt.Errorf("%w: problems %q: an empty item (want ids and ranges like 1-20,36)", ErrSelection, s)
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := parseID(lo)
		if err != nil {
			return Selection{}, fmt.Errorf("%w: problems %q: %q %v (want ids and ranges like 1-20,36)", ErrSelection, s, part, err)
		}
		b := a
		if isRange {
			if b, err = parseID(hi); err != nil {
				return Selection{}, fmt.Errorf("%w: problems %q: %q %v (want ids and ranges like 1-20,36)", ErrSelection, s, part, err)
			}
			if b < a {
				return Selection{}, fmt.Errorf("%w: problems %q: range %q runs backwards (write %d-%d)", ErrSelection, s, part, b, a)
			}
		}
		spans = append(spans, [2]int{a, b})
	}
	slices.SortFunc(spans, func(x, y [2]int) int { return x[0] - y[0] })
	var merged [][2]int
	for _, sp := range spans {
		if n := len(merged); n > 0 && sp[0] <= merged[n-1][1]+1 {
			merged[n-1][1] = max(merged[n-1][1], sp[1])
			continue
		}
		merged = append(merged, sp)
	}
	return Selection{spans: merged}, nil
}

func parseID(s string) (int, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("lacks a number")
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("is not a number")
	}
	if n < 1 {
		return 0, fmt.Errorf("is not a problem id (ids start at 1)")
	}
	return n, nil
}

// All reports whether the selection selects every problem.
func (s Selection) All() bool { return len(s.spans) == 0 }

// Contains reports whether id is selected.
func (s Selection) Contains(id int) bool {
	if s.All() {
		return true
	}
	for _, sp := range s.spans {
		if id >= sp[0] && id <= sp[1] {
			return true
		}
	}
	return false
}

// String is the canonical form: sorted, merged ranges ("1-20,36"), or "all".
func (s Selection) String() string {
	if s.All() {
		return "all"
	}
	parts := make([]string, len(s.spans))
	for i, sp := range s.spans {
		if sp[0] == sp[1] {
			parts[i] = strconv.Itoa(sp[0])
		} else {
			parts[i] = fmt.Sprintf("%d-%d", sp[0], sp[1])
		}
	}
	return strings.Join(parts, ",")
}

// Missing lists the selected ids that are not in have (a selection naming
// problems that do not exist), up to limit of them.
func (s Selection) Missing(have []int, limit int) []int {
	if s.All() {
		return nil
	}
	set := make(map[int]bool, len(have))
	for _, id := range have {
		set[id] = true
	}
	var out []int
	for _, sp := range s.spans {
		for id := sp[0]; id <= sp[1] && len(out) < limit; id++ {
			if !set[id] {
				out = append(out, id)
			}
		}
	}
	return out
}
