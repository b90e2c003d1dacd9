package ui

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
)

// newTestServer serves a kernel dir holding hostileRun's history and a
// sweep dir.
func newTestServer(t *testing.T) (*Server, *store.Store) {
	t.Helper()
	kdir := t.TempDir()
	st, _ := hostileRun(t, kdir)
	srv, err := New(Options{KernelDirs: []string{kdir}, Sweeps: []string{sweepDir(t)}, Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, st
}

func get(t *testing.T, h http.Handler, method, target string) *httptest.ResponseRecorder {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(method, target, nil))
	return w
}

func TestPages(t *testing.T) {
	srv, _ := newTestServer(t)
	run := "/run/k0/" + hostileRunID
	tests := []struct {
		name, method, target string
		status               int
		want, never          []string
	}{
		{"index", "GET", "/", 200, []string{hostileRunID, "/sweep/0"}, nil},
		{"run", "GET", run, 200, []string{"r1c1", `<span class="fail">correctness</span>`, "max abs err 3.2 &lt;b&gt;at&lt;/b&gt;",
			"memory: &lt;i&gt;fuse&lt;/i&gt;", "roofline.svg", "process CPU time (test)", "CV 2.0%", "2x", "open",
			`<span class="muted">cut</span>: slower than the best`}, []string{"<b>at</b>", "<i>fuse", `<span class="fail">slower</span>`}},
		{"run head", "HEAD", run, 200, nil, nil},
		{"candidate", "GET", run + "/c/r1c1", 200, []string{"&lt;script&gt;window.__pwned = 1; alert(1)&lt;/script&gt;",
			"&lt;img src=x onerror=", "&lt;/pre&gt;&lt;script&gt;", "Make it &lt;faster&gt;", "&lt;u&gt;memory&lt;/u&gt;",
			`<span class="add">`, "correctness"},
			[]string{"<script>window", "<img src=x", "<u>memory", "<faster>"}},
		{"candidate input", "GET", run + "/c/input", 200, []string{"none (the input kernel)"}, nil},
		{"sweep", "GET", "/sweep/0", 200, []string{"fast_p", "ReLU", "Softmax&lt;b&gt;", "0.500 (1/2)", "no correct kernel &lt;script&gt;"}, []string{"Softmax<b>", "kernel <script>"}},
		{"static css", "GET", "/static/style.css", 200, nil, nil},
		{"unknown run", "GET", "/run/k0/nope", 404, nil, nil},
		{"unknown candidate", "GET", run + "/c/nope", 404, nil, nil},
		{"unknown source", "GET", "/run/k7/" + hostileRunID, 404, nil, nil},
		{"unknown sweep", "GET", "/sweep/3", 404, nil, nil},
		{"unknown page", "GET", "/nope", 404, nil, nil},
		{"post", "POST", "/", 405, nil, nil},
		{"put run", "PUT", run, 405, nil, nil},
		{"delete file", "DELETE", run + "/file/report.md", 405, nil, nil},
		{"svg", "GET", run + "/file/roofline.svg", 200, []string{"<svg"}, nil},
		{"text file", "GET", run + "/file/round001/cand1/optimize.reply.md", 200, []string{hostileReply}, nil},
		{"missing file", "GET", run + "/file/nope.svg", 404, nil, nil},
		{"escaped dots", "GET", run + "/file/..%2f..%2fsecret.txt", 400, nil, []string{"TOPSECRET"}},
		{"dot dot", "GET", run + "/file/round001/../../../secret.txt", 307, nil, []string{"TOPSECRET"}},
		{"link out", "GET", run + "/file/leak.txt", 403, nil, []string{"TOPSECRET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, srv, tt.method, tt.target)
			body := w.Body.String()
			if w.Code != tt.status {
				t.Fatalf("%s %s: %d, want %d\n%s", tt.method, tt.target, w.Code, tt.status, body)
			}
			h := w.Result().Header
			if csp := h.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") && !strings.Contains(csp, "default-src 'none'") {
				t.Errorf("Content-Security-Policy %q", csp)
			}
			if h.Get("X-Content-Type-Options") != "nosniff" {
				t.Errorf("no X-Content-Type-Options: nosniff")
			}
			if tt.status == 405 && h.Get("Allow") != "GET, HEAD" {
				t.Errorf("Allow %q", h.Get("Allow"))
			}
			for _, s := range tt.want {
				if !strings.Contains(body, s) {
					t.Errorf("body lacks %q:\n%s", s, body)
				}
			}
			for _, s := range tt.never {
				if strings.Contains(body, s) {
					t.Errorf("body holds %q", s)
				}
			}
		})
	}
}

// TestFileHeaders: a served SVG is an image that may run nothing, a text
// file is plain text.
func TestFileHeaders(t *testing.T) {
	srv, _ := newTestServer(t)
	tests := []struct{ name, ctype string }{
		{"roofline.svg", "image/svg+xml"},
		{"report.md", "text/plain; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := get(t, srv, "GET", "/run/k0/"+hostileRunID+"/file/"+tt.name)
			h := w.Result().Header
			if h.Get("Content-Type") != tt.ctype {
				t.Errorf("Content-Type %q, want %q", h.Get("Content-Type"), tt.ctype)
			}
			if csp := h.Get("Content-Security-Policy"); csp != fileCSP {
				t.Errorf("Content-Security-Policy %q, want %q", csp, fileCSP)
			}
		})
	}
}

// TestEventsStream: the live stream sends the recorded events, then one
// appended while it is open, and ends when the server shuts down.
func TestEventsStream(t *testing.T) {
	srv, st := newTestServer(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer cancel()

	evs, err := st.Events(context.Background(), hostileRunID, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1].ID
	resp, err := http.Get("http://" + ln.Addr().String() + "/run/k0/" + hostileRunID + "/events?after=" + itoa(last-1))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("Content-Type %q", ct)
	}
	r := bufio.NewReader(resp.Body)
	waitData := func(want string) {
		t.Helper()
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("stream ended before %q: %v", want, err)
			}
			if strings.HasPrefix(line, "data: ") && strings.Contains(line, want) {
				return
			}
		}
	}
	waitData(`"id":` + itoa(last))
	if _, err := st.AddEvent(context.Background(), store.Event{RunID: hostileRunID, Round: 1, Kind: "test.live", Message: "<b>appended</b>"}); err != nil {
		t.Fatal(err)
	}
	waitData(`"kind":"test.live"`)

	// A client that leaves ends its stream.
	lctx, leave := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(lctx, "GET", "http://"+ln.Addr().String()+"/run/k0/"+hostileRunID+"/events", nil)
	other, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	waitStreams(t, srv, 2)
	leave()
	other.Body.Close()
	waitStreams(t, srv, 1)

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
	case <-time.After(30 * time.Second): // a hang guard only
		t.Fatal("Serve did not return after its context ended")
	}
	waitStreams(t, srv, 0)
}

// waitStreams waits until the server serves n live streams (30 s at most,
// a hang guard).
func waitStreams(t *testing.T, srv *Server, n int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for srv.streams.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d live streams, want %d", srv.streams.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestIsLoopback(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"127.0.0.1:8080", true}, {"localhost:0", true}, {"[::1]:80", true},
		{"0.0.0.0:8080", false}, {":8080", false}, {"192.168.1.2:80", false}, {"example.com:80", false}, {"nonsense", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			if got := IsLoopback(tt.addr); got != tt.want {
				t.Errorf("IsLoopback(%q) = %v, want %v", tt.addr, got, tt.want)
			}
		})
	}
}

// TestNewMissingDir: a dir that does not exist is ErrNoDir.
func TestNewMissingDir(t *testing.T) {
	for _, o := range []Options{{KernelDirs: []string{"/nonexistent/k"}}, {Sweeps: []string{"/nonexistent/s"}}} {
		if _, err := New(o); !errors.Is(err, ErrNoDir) {
			t.Errorf("New(%+v): %v, want ErrNoDir", o, err)
		}
	}
}

// TestSweepHistoryAppearsLater: a sweep shard that writes its history after
// the server started is listed without a restart, and its run can be opened.
func TestSweepHistoryAppearsLater(t *testing.T) {
	dir := t.TempDir()
	srv, err := New(Options{Sweeps: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	get := func(target string) (int, string) {
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		return w.Code, w.Body.String()
	}
	if code, body := get("/"); code != 200 || strings.Contains(body, "late-run") {
		t.Fatalf("before the shard: %d\n%s", code, body)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "history-shard-1-of-2.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.CreateRun(context.Background(), store.Run{ID: "late-run", KernelDir: dir, Problem: "p", Strategy: "greedy", Platform: "cpu"}); err != nil {
		t.Fatal(err)
	}
	code, body := get("/")
	if code != 200 || !strings.Contains(body, "late-run") {
		t.Fatalf("after the shard wrote its history: %d\n%s", code, body)
	}
	if code, _ := get("/run/k0/late-run"); code != 200 {
		t.Errorf("the late shard's run: %d", code)
	}
}
