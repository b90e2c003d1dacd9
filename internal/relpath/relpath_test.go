package relpath

import "testing"

func TestRel(t *testing.T) {
	for _, tc := range []struct{ base, target, want string }{
		{"/k/.kagent/runs/r1", "/k", "../../.."},
		{"/k/.kagent/runs/r1", "/k/.kagent/runs/r1/round001", "round001"},
		{"/out/run", "/home/u/rmsnorm", "../../home/u/rmsnorm"},
		{"/out/run", "/out/run", "."},
		{"/out/run", "examples/rmsnorm", "rmsnorm"},
		{"runs/r1", "/home/u/rmsnorm/", "rmsnorm"},
		{"/out/run", "", ""},
	} {
		if got := Rel(tc.base, tc.target); got != tc.want {
			t.Errorf("Rel(%q, %q) = %q, want %q", tc.base, tc.target, got, tc.want)
		}
	}
}

func TestText(t *testing.T) {
	run := Root{Dir: "/k/.kagent/runs/r1"}
	kdir := Root{Dir: "/k"}
	src := Root{Dir: "/home/u/KernelBench/level1", As: "level1"}
	for _, tc := range []struct {
		name  string
		in    string
		roots []Root
		want  string
	}{
		{"under the run dir", "import failed: /k/.kagent/runs/r1/round001/c1/kernel.py:12: bad", []Root{kdir, run},
			"import failed: round001/c1/kernel.py:12: bad"},
		{"under the kernel dir", "cannot read /k/input.py", []Root{run, kdir}, "cannot read input.py"},
		{"the dir itself", "no kernel in /k, nor in '/k/.kagent/runs/r1'.", []Root{run, kdir}, "no kernel in ., nor in '.'."},
		{"a longer name is another path", "/k2/input.py and /kk and /k.py", []Root{kdir}, "/k2/input.py and /kk and /k.py"},
		{"inside another path", "/x/k/input.py", []Root{kdir}, "/x/k/input.py"},
		{"named folder", "open /home/u/KernelBench/level1/19_ReLU.py: denied", []Root{src}, "open level1/19_ReLU.py: denied"},
		{"twice", "/k/a.py, /k/b.py", []Root{kdir}, "a.py, b.py"},
		{"relative and root folders are ignored", "/k/a.py in k", []Root{{Dir: "k"}, {Dir: "/"}}, "/k/a.py in k"},
		{"no roots", "/k/a.py", nil, "/k/a.py"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Text(tc.in, tc.roots...); got != tc.want {
				t.Errorf("Text(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
}
