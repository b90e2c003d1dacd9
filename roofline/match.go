package roofline

import (
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// Device describes a GPU as a runtime reports it. Only Name is required;
// Target (gfx target or compute capability) and Units (SMs, CUs) resolve
// names that are generic or shared between models.
type Device struct {
	Name   string
	Target string // "gfx1151", "gfx942:sramecc+:xnack-", "9.0"
	Units  int
}

// Lookup finds the entry for a device name: first an exact match of a name,
// device name or alias; then a match after normalisation (case, punctuation
// and vendor words ignored: "h200" finds "NVIDIA H200"); then, for AMD names
// that carry one, the gfx target ("AMD Radeon Graphics gfx1151"). Names are
// never matched as substrings, so "NVIDIA GB200" cannot resolve to the B200.
// A name that matches nothing, or several entries, gives an
// *UnknownGPUError listing the closest known names.
func (db *Database) Lookup(name string) (Specs, error) {
	return db.LookupDevice(Device{Name: name})
}

// LookupDevice is Lookup with the device's target and unit count as extra
// evidence, for generic names ("AMD Radeon Graphics") and families that share
// a target (gfx942: MI300X, MI300A, MI325X).
func (db *Database) LookupDevice(d Device) (Specs, error) {
	name := strings.TrimSpace(d.Name)
	if i, ok := db.exact[name]; ok {
		return cloneSpecs(db.entries[i]), nil
	}
	target := normalizeTarget(d.Target)
	if t := gfxPattern.FindString(strings.ToLower(name)); t != "" && target == "" {
		target = t
	}
	norm := normalize(gfxPattern.ReplaceAllString(strings.ToLower(name), " "))
	byName := db.norm[norm]
	if len(byName) == 1 {
		return cloneSpecs(db.entries[byName[0]]), nil
	}
	candidates := byName
	if target != "" {
		var byTarget []int
		generic := genericNames[norm]
		for i, e := range db.entries {
			if normalizeTarget(e.Target) != target {
				continue
			}
			// A target alone identifies a model only for generic names;
			// otherwise the name must resemble the entry (a Radeon PRO
			// W7900 shares gfx1100 with the RX 7900 XTX but not its specs).
			if generic || containsInt(byName, i) || db.tokensLike(norm, i) >= 0.5 {
				byTarget = append(byTarget, i)
			}
		}
		if len(byTarget) > 0 {
			candidates = byTarget
		}
	}
	if len(candidates) > 1 && d.Units > 0 {
		var byUnits []int
		for _, i := range candidates {
			if db.entries[i].Units == d.Units {
				byUnits = append(byUnits, i)
			}
		}
		if len(byUnits) > 0 {
			candidates = byUnits
		}
	}
	switch {
	case len(candidates) == 1:
		return cloneSpecs(db.entries[candidates[0]]), nil
	case len(candidates) > 1:
		names := make([]string, len(candidates))
		for k, i := range candidates {
			names[k] = db.entries[i].Name
		}
		sort.Strings(names)
		return Specs{}, &UnknownGPUError{Query: d.Name, Ambiguous: true, Candidates: names,
			Hint: "pass the device's unit count or set gpu_name"}
	}
	return Specs{}, &UnknownGPUError{Query: d.Name, Candidates: db.closest(norm, 5), Hint: hintFor(norm, target)}
}

var gfxPattern = regexp.MustCompile(`gfx[0-9a-f]{3,4}`)

// genericNames are normalised device names that say nothing about the
// model; only the target can resolve them.
var genericNames = map[string]bool{"": true, "radeon": true, "instinct": true}

// similarTo is the best similarity of a normalised query to entry i.
func (db *Database) similarTo(norm string, i int) float64 {
	best := 0.0
	for _, id := range db.entries[i].identifiers() {
		best = max(best, similarity(norm, normalize(id)))
	}
	return best
}

// tokensLike is the best token similarity of a normalised query to entry i.
func (db *Database) tokensLike(norm string, i int) float64 {
	best := 0.0
	for _, id := range db.entries[i].identifiers() {
		best = max(best, tokenSimilarity(norm, normalize(id)))
	}
	return best
}

// normalizeTarget turns "gfx942:sramecc+:xnack-" into "gfx942" and
// "sm_90" into "9.0".
func normalizeTarget(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	if g := gfxPattern.FindString(t); g != "" {
		return g
	}
	if rest, ok := strings.CutPrefix(t, "sm_"); ok && len(rest) >= 2 {
		return rest[:len(rest)-1] + "." + rest[len(rest)-1:]
	}
	return t
}

// noiseWords are dropped by normalize: vendor names and decorations that
// vary between reporting tools.
var noiseWords = map[string]bool{
	"nvidia": true, "amd": true, "intel": true, "r": true, "tm": true,
	"geforce": true, "graphics": true, "corporation": true, "vf": true,
}

// normalize lowercases a name, splits it on anything that is not a letter or
// digit, and drops vendor words: "NVIDIA A100-SXM4-80GB" -> "a100 sxm4 80gb",
// "Intel(R) Arc(TM) B580 Graphics" -> "arc b580".
func normalize(s string) string {
	return strings.Join(tokens(s), " ")
}

func tokens(s string) []string {
	fields := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	out := fields[:0]
	for _, f := range fields {
		if !noiseWords[f] {
			out = append(out, f)
		}
	}
	return out
}

func hintFor(norm, target string) string {
	toks := strings.Fields(norm)
	switch {
	case containsStr(toks, "mig"):
		return "a MIG slice has a fraction of the GPU's peaks: add an entry for it with --specs-file"
	case genericNames[norm] && target == "":
		return "generic AMD name: pass the gfx target too (e.g. \"AMD Radeon Graphics gfx1151\")"
	case target != "":
		return "no known GPU has target " + target
	}
	return ""
}

// closest ranks entries by the best similarity of any of their identifiers
// to the normalised query and returns up to n names that are reasonably
// close.
func (db *Database) closest(norm string, n int) []string {
	type scored struct {
		name  string
		score float64
	}
	var all []scored
	for i, e := range db.entries {
		if best := db.similarTo(norm, i); best >= 0.34 {
			all = append(all, scored{e.Name, best})
		}
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].name < all[j].name
	})
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].name)
	}
	return out
}

// similarity is the larger of tokenSimilarity and 1 - normalised edit
// distance, in [0, 1].
func similarity(a, b string) float64 {
	if a == "" || b == "" {
		return 0
	}
	lev := 1 - float64(levenshtein(a, b))/float64(max(len(a), len(b)))
	return max(tokenSimilarity(a, b), lev)
}

// tokenSimilarity is the token overlap (Jaccard) of two normalised names,
// raised to 0.95 when every token of the query a is in b ("h100" is close
// to "h100 sxm", closer than to "h200").
func tokenSimilarity(a, b string) float64 {
	ta, tb := strings.Fields(a), strings.Fields(b)
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	inter := 0
	for _, t := range ta {
		if containsStr(tb, t) {
			inter++
		}
	}
	if inter == len(ta) {
		return max(0.95, float64(inter)/float64(len(ta)+len(tb)-inter))
	}
	return float64(inter) / float64(len(ta)+len(tb)-inter)
}

// levenshtein is the edit distance between two strings, by bytes.
func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func containsStr(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
