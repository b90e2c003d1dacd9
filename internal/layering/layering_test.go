package layering

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// A rule keeps the packages that match From (but not Except) away from the
// packages that match Deny (but not Allow), or, with Only, lets them depend
// on nothing of kagent but the packages that match Only. Patterns are paths
// inside the module; "x/..." matches x and everything below it. A Direct
// rule looks at the packages' own imports; the others at everything they
// depend on, through any chain of imports. Test files are not looked at:
// a test may build what it tests from its parts.
type rule struct {
	Name   string
	Why    string
	From   []string
	Except []string
	Deny   []string
	Allow  []string
	Only   []string
	Direct bool
}

var rules = []rule{
	{
		Name: "the platform contract depends on no implementation",
		Why:  "platform defines what every backend must do; backends import it, never the other way",
		From: []string{"platform"},
		Deny: []string{"platform/...", "profiler/..."},
	},
	{
		Name: "the platforms know nothing of the run",
		Why:  "platforms and profilers verify, time and profile candidates; rounds, strategies, prompts and commands sit above them",
		From: []string{"platform/...", "profiler/..."},
		Deny: []string{"agent/...", "cmd/...", "search/...", "sweep/...", "configs", "prompts"},
	},
	{
		Name:   "implementations are reached through the registry",
		Why:    "code outside platform/ asks for a platform by name (platform.Open) and uses the platform contract; implementation packages are linked in by platform/all",
		From:   []string{"..."},
		Except: []string{"platform/...", "cmd/enginebench"}, // enginebench measures the worker engine itself, on CUDA
		Deny:   []string{"platform/..."},
		Allow:  []string{"platform", "platform/all"},
		Direct: true,
	},
	{
		Name:   "only a command links the platforms in",
		Why:    "platform/all registers every platform as a side effect of its import; libraries and tests build the platform they need (cpu.New(cfg)) and need no globals",
		From:   []string{"..."},
		Except: []string{"cmd/..."},
		Deny:   []string{"platform/all"},
		Direct: true,
	},
	{
		Name:  "search sits below the loop",
		Why:   "a strategy sees the run's record (agent/store) and nothing else of the loop that drives it",
		From:  []string{"search/..."},
		Deny:  []string{"agent/...", "configs", "sweep/...", "cmd/..."},
		Allow: []string{"agent/store"},
	},
	{
		Name: "the loop sits below sweeps and commands",
		Why:  "a sweep runs the loop once per problem; commands run either",
		From: []string{"agent/..."},
		Deny: []string{"sweep/...", "cmd/..."},
	},
	{
		Name: "the run record is a leaf",
		Why:  "agent/store is read by the loop, the strategies, sweeps and commands; it knows only the platform contract's types",
		From: []string{"agent/store/..."},
		Only: []string{"agent/store/...", "platform", "kerneldir", "roofline", "harness", "internal/..."},
	},
	{
		Name: "export reads the run record and nothing of the loop",
		Why:  "kagent export ships a run's best kernel: it reads agent/store and kerneldir; the loop, the platforms and the commands sit elsewhere",
		From: []string{"export/..."},
		Only: []string{"export/...", "agent/store/...", "platform", "kerneldir", "roofline", "harness", "internal/..."},
	},
	{
		Name: "the LLM layer is a leaf",
		Why:  "agent/llm talks to providers; configs, the loop and generation use it",
		From: []string{"agent/llm/..."},
		Only: []string{"agent/llm/...", "internal/..."},
	},
	{
		Name: "prompts are a leaf",
		Why:  "templates render typed data; the loop, dry runs and generation fill it",
		From: []string{"prompts/..."},
		Only: []string{"prompts/...", "roofline", "internal/..."},
	},
	{
		Name: "kerneldir and the harness are leaves",
		Why:  "every layer loads kernel dirs and runs the harness's scripts; they import only each other (kerneldir above harness) and internal/...",
		From: []string{"kerneldir/...", "harness/..."},
		Only: []string{"kerneldir/...", "harness/...", "internal/..."},
	},
	{
		Name: "the harness is below kerneldir",
		Why:  "kerneldir runs the harness's loader script",
		From: []string{"harness/..."},
		Deny: []string{"kerneldir/..."},
	},
	{
		Name: "roofline is a leaf",
		Why:  "the GPU specs database and the roofline analysis are used by platforms, profilers, prompts and reports",
		From: []string{"roofline/..."},
		Only: []string{"roofline/...", "internal/..."},
	},
	{
		Name: "internal packages are leaves",
		Why:  "internal/... holds small helpers (files, processes, the sandbox, suggestions) that every layer may use",
		From: []string{"internal/..."},
		Only: []string{"internal/..."},
	},
}

// maxLines is the most lines a Go file may have (tests included): past it,
// split the file along a seam of what it does.
const maxLines = 600

// TestLayers checks every rule on the module's package graph.
func TestLayers(t *testing.T) {
	g := loadGraph(t)
	for _, r := range rules {
		t.Run(r.Name, func(t *testing.T) {
			for _, p := range g.names {
				if !matchAny(r.From, p) || matchAny(r.Except, p) {
					continue
				}
				reach := g.imports[p]
				if !r.Direct {
					reach = g.reachable(p)
				}
				for _, q := range reach {
					if q == p || !r.forbids(q) {
						continue
					}
					if chain := g.path(p, q); len(chain) > 2 {
						t.Errorf("%s depends on %s through %s: %s (%s)", p, q, strings.Join(chain, " -> "), r.Name, r.Why)
					} else {
						t.Errorf("%s imports %s: %s (%s)", p, q, r.Name, r.Why)
					}
				}
			}
		})
	}
}

// forbids reports whether the rule keeps its packages from q.
func (r rule) forbids(q string) bool {
	if r.Only != nil {
		return !matchAny(r.Only, q)
	}
	return matchAny(r.Deny, q) && !matchAny(r.Allow, q)
}

// TestRulesNameRealPackages: every pattern of a rule matches a package, so
// that a package moved or renamed does not quietly turn a rule off.
func TestRulesNameRealPackages(t *testing.T) {
	g := loadGraph(t)
	for _, r := range rules {
		for _, list := range [][]string{r.From, r.Except, r.Deny, r.Allow, r.Only} {
			for _, pat := range list {
				if !slices.ContainsFunc(g.names, func(p string) bool { return match(pat, p) }) {
					t.Errorf("rule %q: pattern %q matches no package of the module", r.Name, pat)
				}
			}
		}
	}
}

// TestFileSize fails on every Go file of the module (tests, other
// platforms' files and files behind build tags included) over maxLines.
func TestFileSize(t *testing.T) {
	g := loadGraph(t)
	if len(g.files) == 0 {
		t.Fatal("go list named no Go files")
	}
	for _, f := range g.files {
		n, err := countLines(f)
		if err != nil {
			t.Fatal(err)
		}
		if n > maxLines {
			rel, _ := filepath.Rel(g.root, f)
			t.Errorf("%s has %d lines, over %d: split it along a seam of what it does (one main type per file)", rel, n, maxLines)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, c := range []struct {
		pat, path string
		want      bool
	}{
		{"platform", "platform", true},
		{"platform", "platform/cpu", false},
		{"platform/...", "platform", true},
		{"platform/...", "platform/cpu", true},
		{"platform/...", "platformtest", false},
		{"...", "agent", true},
		{"agent/...", "agent/store", true},
		{"agent/store", "agent/storex", false},
	} {
		if got := match(c.pat, c.path); got != c.want {
			t.Errorf("match(%q, %q) = %v, want %v", c.pat, c.path, got, c.want)
		}
	}
}

// match reports whether path (inside the module) matches pat.
func match(pat, path string) bool {
	if pat == "..." {
		return true
	}
	if base, ok := strings.CutSuffix(pat, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pat
}

func matchAny(pats []string, path string) bool {
	return slices.ContainsFunc(pats, func(p string) bool { return match(p, path) })
}

// graph is the module's packages (non-test code) and their imports of each
// other, by path inside the module.
type graph struct {
	root    string
	names   []string            // sorted
	imports map[string][]string // the module's packages each one imports
	files   []string            // every Go file, absolute
}

// reachable lists the module's packages p depends on, through any chain.
func (g *graph) reachable(p string) []string {
	seen := map[string]bool{p: true}
	queue := []string{p}
	var out []string
	for len(queue) > 0 {
		q := queue[0]
		queue = queue[1:]
		for _, d := range g.imports[q] {
			if !seen[d] {
				seen[d] = true
				out = append(out, d)
				queue = append(queue, d)
			}
		}
	}
	slices.Sort(out)
	return out
}

// path is a shortest chain of imports from p to q (both included).
func (g *graph) path(p, q string) []string {
	prev := map[string]string{p: ""}
	queue := []string{p}
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		if x == q {
			break
		}
		for _, d := range g.imports[x] {
			if _, ok := prev[d]; !ok {
				prev[d] = x
				queue = append(queue, d)
			}
		}
	}
	if _, ok := prev[q]; !ok {
		return []string{p, "?", q}
	}
	var out []string
	for x := q; x != ""; x = prev[x] {
		out = append(out, x)
	}
	slices.Reverse(out)
	return out
}

// listed is what `go list -json` says of one package.
type listed struct {
	ImportPath     string
	Dir            string
	Imports        []string
	GoFiles        []string
	CgoFiles       []string
	TestGoFiles    []string
	XTestGoFiles   []string
	IgnoredGoFiles []string
	Error          *struct{ Err string }
}

var (
	graphOnce sync.Once
	theGraph  *graph
	graphErr  error
)

// loadGraph asks the go command for the module's packages, once per test
// binary.
func loadGraph(t *testing.T) *graph {
	t.Helper()
	graphOnce.Do(func() { theGraph, graphErr = listModule() })
	if graphErr != nil {
		t.Fatal(graphErr)
	}
	return theGraph
}

func listModule() (*graph, error) {
	// go test puts its own GOROOT/bin first on PATH, so this is the go
	// command that runs the test.
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, errors.New("layering: the go command is not on PATH: " + err.Error())
	}
	run := func(args ...string) ([]byte, error) {
		cmd := exec.Command(goBin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, errors.New("layering: go " + strings.Join(args, " ") + ": " + err.Error() + ": " + stderr.String())
		}
		return out, nil
	}
	mod, err := run("list", "-m", "-f", "{{.Path}} {{.Dir}}")
	if err != nil {
		return nil, err
	}
	modPath, root, ok := strings.Cut(strings.TrimSpace(string(mod)), " ")
	if !ok {
		return nil, errors.New("layering: go list -m: unexpected output " + string(mod))
	}
	out, err := run("list", "-C", root, "-json=ImportPath,Dir,Imports,GoFiles,CgoFiles,TestGoFiles,XTestGoFiles,IgnoredGoFiles,Error", "./...")
	if err != nil {
		return nil, err
	}
	g := &graph{root: root, imports: map[string][]string{}}
	inModule := func(p string) (string, bool) {
		if p == modPath {
			return ".", true
		}
		return strings.CutPrefix(p, modPath+"/")
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, errors.New("layering: decode go list: " + err.Error())
		}
		if p.Error != nil {
			return nil, errors.New("layering: package " + p.ImportPath + ": " + p.Error.Err)
		}
		name, ok := inModule(p.ImportPath)
		if !ok {
			continue
		}
		g.names = append(g.names, name)
		for _, imp := range p.Imports {
			if q, ok := inModule(imp); ok {
				g.imports[name] = append(g.imports[name], q)
			}
		}
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.TestGoFiles, p.XTestGoFiles, p.IgnoredGoFiles} {
			for _, f := range list {
				g.files = append(g.files, filepath.Join(p.Dir, f))
			}
		}
	}
	slices.Sort(g.names)
	return g, nil
}

// countLines counts the lines of a file (a last line without a newline
// counts).
func countLines(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n, nil
}
