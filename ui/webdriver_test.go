package ui

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"
)

// webDriver is a minimal client of chromedriver's W3C WebDriver HTTP API:
// one session of headless Chromium.
type webDriver struct {
	base    string // http://127.0.0.1:PORT
	session string
	client  *http.Client
}

// wdError is an error reply of the WebDriver API.
type wdError struct {
	Code, Message string
}

func (e *wdError) Error() string { return e.Code + ": " + e.Message }

// startWebDriver starts chromedriver on a free loopback port and opens a
// headless session of the browser at chromium; both end with the test.
func startWebDriver(t *testing.T, chromedriver, chromium string) *webDriver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, chromedriver, "--port="+strconv.Itoa(port))
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	wd := &webDriver{base: fmt.Sprintf("http://127.0.0.1:%d", port), client: &http.Client{Timeout: 60 * time.Second}}
	t.Cleanup(func() {
		if wd.session != "" {
			_ = wd.do("DELETE", "/session/"+wd.session, nil, nil)
		}
		cancel()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(30 * time.Second) // a hang guard only
	for {
		var st struct{ Ready bool }
		if err := wd.do("GET", "/status", nil, &st); err == nil && st.Ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not start:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		// An alert stays open, so the test can see one.
		"unhandledPromptBehavior": "ignore",
		"goog:chromeOptions": map[string]any{
			"binary": chromium,
			"args": []string{"--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
				"--no-first-run", "--window-size=1200,850", "--hide-scrollbars"},
		},
	}}}
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := wd.do("POST", "/session", caps, &sess); err != nil {
		t.Fatalf("new session: %v\n%s", err, logs.String())
	}
	wd.session = sess.SessionID
	return wd
}

// do sends one command and decodes the reply's value into out.
func (wd *webDriver) do(method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, wd.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := wd.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var reply struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &reply); err != nil {
		return fmt.Errorf("%s %s: %d %q", method, path, resp.StatusCode, b)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error   string `json:"error"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(reply.Value, &e)
		return &wdError{Code: e.Error, Message: e.Message}
	}
	if out != nil {
		return json.Unmarshal(reply.Value, out)
	}
	return nil
}

func (wd *webDriver) path(p string) string { return "/session/" + wd.session + p }

// open navigates to url and waits for the page to load.
func (wd *webDriver) open(t *testing.T, url string) {
	t.Helper()
	if err := wd.do("POST", wd.path("/url"), map[string]string{"url": url}, nil); err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
}

// eval runs script (a function body that returns a value) in the page.
func (wd *webDriver) eval(t *testing.T, script string, out any) {
	t.Helper()
	if err := wd.do("POST", wd.path("/execute/sync"), map[string]any{"script": script, "args": []any{}}, out); err != nil {
		t.Fatalf("script %q: %v", script, err)
	}
}

// waitTrue polls script until it returns true (30 s at most, a hang guard).
func (wd *webDriver) waitTrue(t *testing.T, what, script string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		wd.eval(t, script, &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var text string
			wd.eval(t, "return document.body ? document.body.innerText : ''", &text)
			t.Fatalf("%s: not seen in 30 s; the page says:\n%s", what, text)
		}
		time.Sleep(150 * time.Millisecond)
	}
}

// alertText is the text of an open alert, "" when none is open.
func (wd *webDriver) alertText(t *testing.T) string {
	t.Helper()
	var text string
	err := wd.do("GET", wd.path("/alert/text"), nil, &text)
	if e, ok := err.(*wdError); ok && e.Code == "no such alert" {
		return ""
	}
	if err != nil {
		t.Fatalf("alert text: %v", err)
	}
	// Close it, so that the next steps can go on.
	_ = wd.do("POST", wd.path("/alert/dismiss"), map[string]any{}, nil)
	return "alert: " + text
}

// screenshot saves the viewport as a PNG file.
func (wd *webDriver) screenshot(t *testing.T, path string) {
	t.Helper()
	var b64 string
	if err := wd.do("GET", wd.path("/screenshot"), nil, &b64); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
}
