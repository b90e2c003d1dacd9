package ui

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
	"github.com/kagent-kernels/kagent/internal/pythontest"
)

// browsers finds chromedriver and Chromium. Without them the browser test
// skips, unless KAGENT_REQUIRE_BROWSER=1 (CI) makes that a failure.
func browsers(t *testing.T) (chromedriver, chromium string) {
	t.Helper()
	chromedriver, err := exec.LookPath("chromedriver")
	if err == nil {
		for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
			if chromium, err = exec.LookPath(name); err == nil {
				break
			}
		}
	}
	if err != nil {
		if os.Getenv("KAGENT_REQUIRE_BROWSER") == "1" {
			t.Fatalf("no chromedriver and Chromium (apt-get install chromium chromium-driver; KAGENT_REQUIRE_BROWSER=1): %v", err)
		}
		t.Skipf("no chromedriver and Chromium (apt-get install chromium chromium-driver): %v", err)
	}
	return chromedriver, chromium
}

// artifactDir is where the test's screenshots go: $KAGENT_TEST_ARTIFACTS/ui
// or a temporary dir.
func artifactDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if root := os.Getenv("KAGENT_TEST_ARTIFACTS"); root != "" {
		dir = filepath.Join(root, "ui")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// optimizeExample builds kagent and runs one round of the rmsnorm example on
// the cpu platform with its recorded LLM transcript, in a copy of the
// example. It returns the binary and the kernel dir.
func optimizeExample(t *testing.T) (bin, kdir string) {
	t.Helper()
	pythontest.Triton(t)
	tmp := t.TempDir()
	bin = filepath.Join(tmp, "kagent")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/kagent-kernels/kagent/cmd/kagent").CombinedOutput(); err != nil {
		t.Fatalf("build kagent: %v\n%s", err, out)
	}
	kdir = filepath.Join(tmp, "rmsnorm")
	if err := os.CopyFS(kdir, os.DirFS(filepath.Join("..", "examples", "rmsnorm"))); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "optimize", "--kernel-dir", kdir, "--platform", "cpu",
		"--llm-replay", filepath.Join(kdir, "transcript"), "--llm-replay-match", "purpose", "--max-rounds", "1", "--no-progress")
	cmd.Env = append(os.Environ(), "KAGENT_PLATFORM_KWARGS=triton=require")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kagent optimize: %v\n%s", err, out)
	}
	return bin, kdir
}

// serveUI starts `kagent ui --port 0` and returns the URL it prints; the
// server gets SIGINT when the test ends.
func serveUI(t *testing.T, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, append([]string{"ui", "--port", "0"}, args...)...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("kagent ui printed no URL: %v", err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "serving ")
	url, _, _ = strings.Cut(url, " ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("kagent ui printed %q, want its URL", line)
	}
	return strings.TrimSuffix(url, "/")
}

// TestBrowser drives headless Chromium through the pages of a real cpu run
// and of a run with hostile text: the list shows the runs, the run page its
// rounds and verdicts, an event appended while the page is open appears, no
// script of a kernel, reply or plot runs, and screenshots are saved.
func TestBrowser(t *testing.T) {
	chromedriver, chromium := browsers(t)
	bin, kdir := optimizeExample(t)
	st, _ := hostileRun(t, kdir)
	ctx := context.Background()
	runs, err := st.ListRuns(ctx, store.RunFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var real store.Run
	for _, r := range runs {
		if r.ID != hostileRunID {
			real = r
		}
	}
	if real.ID == "" {
		t.Fatal("the optimize run is not in the history")
	}
	base := serveUI(t, bin, "--kernel-dir", kdir, "--sweep", sweepDir(t))
	wd := startWebDriver(t, chromedriver, chromium)
	shots := artifactDir(t)
	t.Logf("screenshots in %s", shots)
	noScript := func(t *testing.T, where string) {
		t.Helper()
		if a := wd.alertText(t); a != "" {
			t.Fatalf("%s: an %s is open: a script ran", where, a)
		}
		var pwned any
		wd.eval(t, "return window.__pwned === undefined ? null : String(window.__pwned)", &pwned)
		if pwned != nil {
			t.Fatalf("%s: window.__pwned = %v: a script of the page's data ran", where, pwned)
		}
	}
	has := func(text string) string {
		return "return document.body !== null && document.body.innerText.includes(" + jsString(text) + ")"
	}

	t.Run("runs list", func(t *testing.T) {
		wd.open(t, base+"/")
		wd.waitTrue(t, "the real run in the list", has(real.ID))
		wd.waitTrue(t, "the hostile run in the list", has(hostileRunID))
		noScript(t, "runs list")
		wd.screenshot(t, filepath.Join(shots, "runs.png"))
	})
	t.Run("run page", func(t *testing.T) {
		wd.open(t, base+"/run/k0/"+real.ID)
		wd.waitTrue(t, "rounds 0 and 1", has("Round 0")+" && document.body.innerText.includes('Round 1')")
		wd.waitTrue(t, "a verdict", "return document.querySelectorAll('td.verdict .pass').length >= 2")
		wd.waitTrue(t, "the roofline plot loaded", "var i = document.querySelector('img[alt=\"roofline.svg\"]'); return i !== null && i.complete && i.naturalWidth > 0")
		noScript(t, "run page")
		wd.screenshot(t, filepath.Join(shots, "run.png"))
	})
	t.Run("live update", func(t *testing.T) {
		wd.open(t, base+"/run/k0/"+hostileRunID)
		wd.waitTrue(t, "the live stream connected", has("live: following"))
		wd.waitTrue(t, "the failing check", "return Array.from(document.querySelectorAll('td.verdict .fail')).some(e => e.textContent === 'correctness')")
		if _, err := st.AddCandidate(ctx, store.Candidate{RunID: hostileRunID, ID: "r1c3", Round: 1, Slot: 3, ParentID: store.InputID,
			Direction: "live: <b>added while open</b>", Source: "import triton\n"}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.AddEvent(ctx, store.Event{RunID: hostileRunID, Round: 1, Kind: "test.live", Message: "<img src=x onerror=\"window.__pwned=5\">live marker"}); err != nil {
			t.Fatal(err)
		}
		wd.waitTrue(t, "the appended event, as text", has("<img src=x onerror=\"window.__pwned=5\">live marker"))
		wd.waitTrue(t, "the new candidate in the rounds table", has("live: <b>added while open</b>"))
		noScript(t, "live run page")
		wd.eval(t, "window.scrollTo(0, document.body.scrollHeight); return true", nil)
		wd.screenshot(t, filepath.Join(shots, "live.png"))
	})
	t.Run("hostile candidate", func(t *testing.T) {
		wd.open(t, base+"/run/k0/"+hostileRunID+"/c/r1c1")
		wd.waitTrue(t, "the kernel's script tag as text", has("<script>window.__pwned = 1; alert(1)</script>"))
		wd.waitTrue(t, "the reply's markup as text", has("<img src=x onerror="))
		var scripts int
		wd.eval(t, "return document.scripts.length", &scripts)
		if scripts != 1 {
			t.Errorf("the page has %d script elements, want 1 (app.js)", scripts)
		}
		noScript(t, "candidate page")
		wd.screenshot(t, filepath.Join(shots, "candidate.png"))
	})
	t.Run("real candidate", func(t *testing.T) {
		wd.open(t, base+"/run/k0/"+real.ID+"/c/"+real.BestID)
		wd.waitTrue(t, "the diff against the input", "return document.querySelectorAll('pre.diff .add').length > 0")
		wd.waitTrue(t, "the timing method", has("timing method"))
		noScript(t, "real candidate page")
		wd.screenshot(t, filepath.Join(shots, "candidate-diff.png"))
	})
	t.Run("sweep", func(t *testing.T) {
		wd.open(t, base+"/sweep/0")
		wd.waitTrue(t, "fast_p of the sweep", has("fast_p")+" && document.body.innerText.includes('0.500 (1/2)')")
		wd.waitTrue(t, "the problem names as text", has("Softmax<b>"))
		noScript(t, "sweep page")
		wd.screenshot(t, filepath.Join(shots, "sweep.png"))
	})
	t.Run("svg file", func(t *testing.T) {
		wd.open(t, base+"/run/k0/"+hostileRunID+"/file/roofline.svg")
		noScript(t, "the hostile SVG")
	})
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "<", `\x3c`)
	return `"` + r.Replace(s) + `"`
}
