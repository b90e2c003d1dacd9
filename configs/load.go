package configs

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/kagent-kernels/kagent/internal/suggest"
)

//go:embed strategies/*.yaml
var embedded embed.FS

// LocalDir is the folder whose NAME.yaml files override the embedded ones.
const LocalDir = "configs"

// Source says where a named config comes from.
type Source struct {
	Name string
	Path string // "embedded:strategies/NAME.yaml" or a file path
	Data []byte
}

// Embedded lists the embedded config names, sorted.
func Embedded() []string {
	entries, _ := fs.ReadDir(embedded, "strategies")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	sort.Strings(names)
	return names
}

// List returns every config name reachable with --strategy: the embedded set
// plus ./configs/*.yaml (which win over embedded ones of the same name).
func List(workDir string) ([]Source, error) {
	byName := map[string]Source{}
	for _, n := range Embedded() {
		s, err := embeddedSource(n)
		if err != nil {
			return nil, err
		}
		byName[n] = s
	}
	local, _ := filepath.Glob(filepath.Join(workDir, LocalDir, "*.yaml"))
	for _, p := range local {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("list configs: %w", err)
		}
		n := strings.TrimSuffix(filepath.Base(p), ".yaml")
		byName[n] = Source{Name: n, Path: p, Data: data}
	}
	var out []Source
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func embeddedSource(name string) (Source, error) {
	p := "strategies/" + name + ".yaml"
	data, err := embedded.ReadFile(p)
	if err != nil {
		return Source{}, err
	}
	return Source{Name: name, Path: "embedded:" + p, Data: data}, nil
}

// Resolve finds the config named by --strategy: ./configs/NAME.yaml under
// workDir if it exists, else the embedded one.
func Resolve(workDir, name string) (Source, error) {
	if name == "" || strings.ContainsAny(name, `/\`) {
		return Source{}, fmt.Errorf("strategy %q: give a config name such as greedy (see `kagent configs list`), or a file with --config", name)
	}
	p := filepath.Join(workDir, LocalDir, name+".yaml")
	if data, err := os.ReadFile(p); err == nil {
		return Source{Name: name, Path: p, Data: data}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Source{}, fmt.Errorf("strategy %s: %w", name, err)
	}
	s, err := embeddedSource(name)
	if err != nil {
		return Source{}, unknownConfig(workDir, name)
	}
	return s, nil
}

// unknownConfig is the error for a --strategy name that names no config: it
// names the closest config when one is close, else every embedded one.
func unknownConfig(workDir, name string) error {
	var names []string
	if list, err := List(workDir); err == nil {
		for _, s := range list {
			names = append(names, s.Name)
		}
	}
	if s := suggest.Closest(name, names); s != "" {
		return fmt.Errorf("%w: %q; did you mean %q? (see `kagent configs list`)", ErrUnknownConfig, name, s)
	}
	return fmt.Errorf("%w: %q (known: %s; or put configs/%s.yaml in the working directory)", ErrUnknownConfig, name, strings.Join(Embedded(), ", "), name)
}

// ReadFile reads a config file given with --config.
func ReadFile(path string) (Source, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Source{}, fmt.Errorf("config %s: file not found", path)
		}
		return Source{}, fmt.Errorf("config %s: %w", path, err)
	}
	return Source{Name: strings.TrimSuffix(filepath.Base(path), filepath.Ext(path)), Path: path, Data: data}, nil
}

// Apply decodes a YAML source onto cfg: keys present in the file replace the
// values already there. Unknown keys and malformed YAML are errors that name
// the file and line.
func Apply(cfg *Config, src Source) error {
	dec := yaml.NewDecoder(bytes.NewReader(src.Data))
	dec.KnownFields(true)
	err := dec.Decode(cfg)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	return yamlError(src.Path, err)
}

var (
	lineRe    = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownRe = regexp.MustCompile(`^field (\S+) not found in type configs\.(\w+)$`)
)

// sections names the YAML block each nested config type is decoded from.
var sections = map[string]struct {
	key string
	typ reflect.Type
}{
	"Config":         {"", reflect.TypeOf(Config{})},
	"StrategyConfig": {"strategy_config", reflect.TypeOf(StrategyConfig{})},
	"RooflineConfig": {"roofline", reflect.TypeOf(RooflineConfig{})},
	"LLMConfig":      {"llm", reflect.TypeOf(LLMConfig{})},
	"BudgetConfig":   {"budget", reflect.TypeOf(BudgetConfig{})},
	"TimeoutConfig":  {"timeouts", reflect.TypeOf(TimeoutConfig{})},
}

// knownKeys lists the YAML keys of a config struct type.
func knownKeys(t reflect.Type) []string {
	var keys []string
	for i := 0; i < t.NumField(); i++ {
		if k, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ","); k != "" && k != "-" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// yamlError turns a yaml.v3 error into "FILE:LINE: what is wrong" lines.
func yamlError(path string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var out []string
	for _, m := range msgs {
		m = strings.TrimSpace(strings.TrimPrefix(m, "yaml: unmarshal errors:"))
		sm := lineRe.FindStringSubmatch(m)
		if sm == nil {
			out = append(out, fmt.Sprintf("%s: %s", path, m))
			continue
		}
		line, what := sm[1], sm[2]
		if um := unknownRe.FindStringSubmatch(what); um != nil {
			sec := sections[um[2]]
			where := ""
			if sec.key != "" {
				where = " in " + sec.key
			}
			what = fmt.Sprintf("unknown key %q%s", um[1], where)
			if sec.typ != nil {
				known := knownKeys(sec.typ)
				if s := suggest.Closest(um[1], known); s != "" {
					what += fmt.Sprintf("; did you mean %q?", s)
				} else {
					what += " (known: " + strings.Join(known, ", ") + ")"
				}
			}
		}
		out = append(out, fmt.Sprintf("%s:%s: %s", path, line, what))
	}
	return fmt.Errorf("%w: %s", ErrInvalid, strings.Join(out, "; "))
}

// LoadOptions says which YAML layer to use.
type LoadOptions struct {
	WorkDir    string // where ./configs is looked up
	Strategy   string // --strategy NAME ("" = none)
	ConfigFile string // --config FILE ("" = none)
	Getenv     func(string) string
}

// Load builds the configuration from defaults, one YAML layer and the KAGENT_*
// environment. --strategy and --config are exclusive. Flags are applied by the
// caller, which then calls Normalize and Validate.
func Load(o LoadOptions) (Config, Source, error) {
	cfg := Default()
	var src Source
	var err error
	switch {
	case o.ConfigFile != "" && o.Strategy != "":
		err = fmt.Errorf("%w: give --strategy NAME or --config FILE, not both", ErrInvalid)
	case o.ConfigFile != "":
		src, err = ReadFile(o.ConfigFile)
	case o.Strategy != "":
		src, err = Resolve(o.WorkDir, o.Strategy)
	default:
		src, err = embeddedSource(StrategyGreedy)
	}
	if err != nil {
		return cfg, src, err
	}
	if err := Apply(&cfg, src); err != nil {
		return cfg, src, err
	}
	if err := ApplyEnv(&cfg, o.Getenv); err != nil {
		return cfg, src, err
	}
	return cfg, src, nil
}
