package roofline

import (
	_ "embed"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

//go:embed specs.yaml
var embeddedSpecs []byte

// Database is a set of GPU specs that can be looked up by the device names
// torch reports. A Database is immutable once built and safe for concurrent
// use; LoadOverrides returns a new one.
type Database struct {
	entries []Specs
	exact   map[string]int   // name, device name or alias -> entry
	norm    map[string][]int // normalised identifier -> entries
}

var defaultDB = sync.OnceValue(func() *Database {
	db, err := Parse(embeddedSpecs, "specs.yaml")
	if err != nil {
		// The embedded file is tested; a failure here is a build defect.
		panic(fmt.Sprintf("roofline: embedded specs: %v", err))
	}
	return db
})

// Default returns the database built from the embedded specs.yaml.
func Default() *Database { return defaultDB() }

// Lookup finds a GPU in the default database (see Database.Lookup).
func Lookup(name string) (Specs, error) { return Default().Lookup(name) }

// All returns every GPU of the default database, sorted by name.
func All() []Specs { return Default().All() }

// LoadOverrides returns the default database with the entries of the YAML
// file at path merged in (see Database.LoadOverrides).
func LoadOverrides(path string) (*Database, error) { return Default().LoadOverrides(path) }

// Parse builds a database from YAML of the form `gpus: [ {name: ..., ...} ]`.
// file names the source in error messages ("file:line: ...").
func Parse(data []byte, file string) (*Database, error) {
	db := &Database{}
	return db.merge(data, file, false)
}

// LoadOverrides reads a YAML file of the same shape as the embedded database
// and returns a new database with its entries merged in. An entry whose name
// matches a known GPU (by name, device name or alias) overrides only the
// fields it sets; any other entry is added and must be complete. Unknown keys
// are rejected with the file and line.
func (db *Database) LoadOverrides(path string) (*Database, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load gpu specs overrides: %w", err)
	}
	return db.Merge(data, path)
}

// Merge is LoadOverrides on bytes already read; file names them in errors.
func (db *Database) Merge(data []byte, file string) (*Database, error) {
	return db.merge(data, file, true)
}

func (db *Database) merge(data []byte, file string, override bool) (*Database, error) {
	items, err := parseEntries(data, file)
	if err != nil {
		return nil, err
	}
	out := &Database{entries: make([]Specs, 0, len(db.entries)+len(items))}
	for _, e := range db.entries {
		out.entries = append(out.entries, cloneSpecs(e))
	}
	if err := out.index(); err != nil {
		return nil, err
	}
	for _, it := range items {
		var head struct {
			Name string `yaml:"name"`
		}
		if err := it.node.Decode(&head); err != nil {
			return nil, fmt.Errorf("%s:%d: %w: %v", file, it.node.Line, ErrInvalidSpecs, yamlMessage(err))
		}
		name := head.Name
		if strings.TrimSpace(name) == "" {
			return nil, fmt.Errorf("%s:%d: %w: entry without a name", file, it.node.Line, ErrInvalidSpecs)
		}
		idx := -1
		if override {
			idx = out.find(name)
		}
		if idx >= 0 {
			merged := cloneSpecs(out.entries[idx])
			canonical := merged.Name
			if err := it.node.Decode(&merged); err != nil {
				return nil, fmt.Errorf("%s:%d: %w: %v", file, it.node.Line, ErrInvalidSpecs, yamlMessage(err))
			}
			merged.Name = canonical
			if err := merged.Validate(); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, it.node.Line, err)
			}
			out.entries[idx] = merged
		} else {
			var s Specs
			if err := it.node.Decode(&s); err != nil {
				return nil, fmt.Errorf("%s:%d: %w: %v", file, it.node.Line, ErrInvalidSpecs, yamlMessage(err))
			}
			if err := s.Validate(); err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, it.node.Line, err)
			}
			out.entries = append(out.entries, s)
		}
		if err := out.index(); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", file, it.node.Line, err)
		}
	}
	return out, nil
}

// index rebuilds the lookup maps; it fails when two entries claim the same
// identifier.
func (db *Database) index() error {
	db.exact = make(map[string]int)
	db.norm = make(map[string][]int)
	for i, e := range db.entries {
		for _, id := range e.identifiers() {
			if j, ok := db.exact[id]; ok && j != i {
				return fmt.Errorf("%w: %q names both %q and %q", ErrInvalidSpecs, id, db.entries[j].Name, e.Name)
			}
			db.exact[id] = i
			n := normalize(id)
			if n == "" {
				continue
			}
			if !slices.Contains(db.norm[n], i) {
				db.norm[n] = append(db.norm[n], i)
			}
		}
	}
	return nil
}

// find returns the entry a name identifies exactly or after normalisation,
// or -1.
func (db *Database) find(name string) int {
	if i, ok := db.exact[strings.TrimSpace(name)]; ok {
		return i
	}
	if idx := db.norm[normalize(name)]; len(idx) == 1 {
		return idx[0]
	}
	return -1
}

// All returns a copy of every entry, sorted by name.
func (db *Database) All() []Specs {
	out := make([]Specs, 0, len(db.entries))
	for _, e := range db.entries {
		out = append(out, cloneSpecs(e))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Names returns the entries' names, sorted.
func (db *Database) Names() []string {
	out := make([]string, 0, len(db.entries))
	for _, e := range db.entries {
		out = append(out, e.Name)
	}
	sort.Strings(out)
	return out
}

// Len is the number of entries.
func (db *Database) Len() int { return len(db.entries) }

// identifiers are the strings that name an entry exactly.
func (s Specs) identifiers() []string {
	ids := []string{s.Name}
	ids = append(ids, s.DeviceNames...)
	ids = append(ids, s.Aliases...)
	return ids
}

// Validate checks that an entry is usable by the analyzer.
func (s Specs) Validate() error {
	var problems []string
	if strings.TrimSpace(s.Name) == "" {
		problems = append(problems, "name is empty")
	}
	if s.Vendor == "" {
		problems = append(problems, "vendor is empty")
	}
	if s.MemBWGBs <= 0 {
		problems = append(problems, "mem_bw_gbs must be > 0")
	}
	if s.FP32TFLOPS <= 0 {
		problems = append(problems, "fp32_tflops must be > 0")
	}
	for key, v := range map[string]float64{
		"tf32_tflops": s.TF32TFLOPS, "fp16_tflops": s.FP16TFLOPS, "bf16_tflops": s.BF16TFLOPS,
		"fp8_tflops": s.FP8TFLOPS, "mem_gb": s.MemGB, "l2_mb": s.L2MB, "smem_kb": s.SmemKB, "tdp_w": s.TDPWatts,
	} {
		if v < 0 {
			problems = append(problems, key+" is negative")
		}
	}
	if s.Units < 0 || s.WarpSize < 0 {
		problems = append(problems, "units and warp_size must not be negative")
	}
	keys := specsKeys()
	for _, u := range s.Unsourced {
		if !slices.Contains(keys, u) {
			problems = append(problems, fmt.Sprintf("unsourced names unknown key %q", u))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	sort.Strings(problems)
	return fmt.Errorf("validate gpu %q: %w: %s", s.Name, ErrInvalidSpecs, strings.Join(problems, "; "))
}

type entryNode struct{ node *yaml.Node }

// parseEntries checks the document's shape and keys and returns the entry
// nodes, so that errors carry line numbers.
func parseEntries(data []byte, file string) ([]entryNode, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", file, ErrInvalidSpecs, yamlMessage(err))
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return nil, nil // empty file
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s:%d: %w: want a mapping with a `gpus` list", file, doc.Line, ErrInvalidSpecs)
	}
	var list *yaml.Node
	for i := 0; i+1 < len(doc.Content); i += 2 {
		k, v := doc.Content[i], doc.Content[i+1]
		if k.Value != "gpus" {
			return nil, fmt.Errorf("%s:%d: %w: unknown key %q (want `gpus`)", file, k.Line, ErrInvalidSpecs, k.Value)
		}
		list = v
	}
	if list == nil || list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return nil, nil
	}
	if list.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("%s:%d: %w: `gpus` must be a list", file, list.Line, ErrInvalidSpecs)
	}
	keys := specsKeys()
	var out []entryNode
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: %w: a gpu entry must be a mapping", file, item.Line, ErrInvalidSpecs)
		}
		for i := 0; i+1 < len(item.Content); i += 2 {
			k := item.Content[i]
			if !slices.Contains(keys, k.Value) {
				return nil, fmt.Errorf("%s:%d: %w: unknown key %q%s", file, k.Line, ErrInvalidSpecs, k.Value, suggestKey(k.Value, keys))
			}
		}
		out = append(out, entryNode{node: item})
	}
	return out, nil
}

// specsKeys are the YAML keys of Specs.
var specsKeys = sync.OnceValue(func() []string {
	t := reflect.TypeFor[Specs]()
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		tag := t.Field(i).Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name != "" && name != "-" {
			keys = append(keys, name)
		}
	}
	return keys
})

func suggestKey(k string, keys []string) string {
	best, bestD := "", 4
	for _, c := range keys {
		if d := levenshtein(k, c); d < bestD {
			best, bestD = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// yamlMessage drops the "yaml: " prefix of the library's errors.
func yamlMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
	return strings.ReplaceAll(msg, "\n  ", "; ")
}

func cloneSpecs(s Specs) Specs {
	s.DeviceNames = slices.Clone(s.DeviceNames)
	s.Aliases = slices.Clone(s.Aliases)
	s.Unsourced = slices.Clone(s.Unsourced)
	return s
}

// IsUnsourced reports whether the figure under a YAML key (e.g.
// "l2_mb") could not be sourced.
func (s Specs) IsUnsourced(key string) bool { return slices.Contains(s.Unsourced, key) }
