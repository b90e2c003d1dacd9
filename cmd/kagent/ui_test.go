package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// TestUIOptions parses `kagent ui` command lines without serving.
func TestUIOptions(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		addr       string
		kdirs      []string
		sweeps     []string
		usageError string
	}{
		{"defaults", nil, "127.0.0.1:8080", []string{"."}, nil, ""},
		{"port", []string{"--port", "0"}, "127.0.0.1:0", []string{"."}, nil, ""},
		{"addr", []string{"--addr", "0.0.0.0:9000"}, "0.0.0.0:9000", []string{"."}, nil, ""},
		{"dirs", []string{"-k", "a", "-k", "b", "--sweep", "s"}, "127.0.0.1:8080", []string{"a", "b"}, []string{"s"}, ""},
		{"sweep only", []string{"--sweep", "s"}, "127.0.0.1:8080", nil, []string{"s"}, ""},
		{"addr and port", []string{"--addr", "127.0.0.1:1", "--port", "2"}, "", nil, nil, "not both"},
		{"bad port", []string{"--port", "70000"}, "", nil, nil, "0 to 65535"},
		{"bad addr", []string{"--addr", "localhost"}, "", nil, nil, "HOST:PORT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got uiOpts
			var gotErr error
			cmd := uiCommand()
			cmd.Action = func(c *cli.Context) error {
				got, gotErr = uiOptions(c)
				return nil
			}
			app := &cli.App{Name: "kagent", Commands: []*cli.Command{cmd}, Flags: newApp().Flags}
			if err := app.Run(append([]string{"kagent", "ui"}, tt.args...)); err != nil {
				t.Fatal(err)
			}
			if tt.usageError != "" {
				if exitCode(gotErr) != ExitUsage || gotErr == nil || !strings.Contains(gotErr.Error(), tt.usageError) {
					t.Errorf("error %v (exit %d), want a usage error with %q", gotErr, exitCode(gotErr), tt.usageError)
				}
				return
			}
			if gotErr != nil {
				t.Fatal(gotErr)
			}
			if got.Addr != tt.addr || !slices.Equal(got.KernelDirs, tt.kdirs) || !slices.Equal(got.Sweeps, tt.sweeps) {
				t.Errorf("got addr %q kernel dirs %q sweeps %q, want %q %q %q", got.Addr, got.KernelDirs, got.Sweeps, tt.addr, tt.kdirs, tt.sweeps)
			}
		})
	}
}

// TestUIMissingDir: a kernel or sweep dir that does not exist is one line
// and exit 2.
func TestUIMissingDir(t *testing.T) {
	dir := t.TempDir()
	oneLineError(t, run(t, dir, "ui", "--port", "0", "--kernel-dir", "nope"), ExitUsage, "nope", "--kernel-dir")
	oneLineError(t, run(t, dir, "serve", "--port", "0", "--sweep", "gone"), ExitUsage, "gone")
}

// TestUIServesAndStops: the binary prints its URL on one line (--port 0
// picks a free port), serves the index, warns when it binds a non-loopback
// address, and stops on SIGINT with exit 130.
func TestUIServesAndStops(t *testing.T) {
	tests := []struct {
		name string
		args []string
		warn bool
	}{
		{"loopback", []string{"--port", "0"}, false},
		{"any address", []string{"--addr", "0.0.0.0:0", "--json"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard only
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, append([]string{"ui", "--kernel-dir", t.TempDir()}, tt.args...)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil {
				t.Fatalf("no URL line: %v (stderr %q)", err, stderr.String())
			}
			url := ""
			if strings.HasPrefix(line, "{") {
				var v struct{ URL string }
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("--json line %q: %v", line, err)
				}
				url = v.URL
			} else {
				_, url, _ = strings.Cut(line, "serving ")
				url, _, _ = strings.Cut(url, " ")
			}
			url = strings.Replace(url, "0.0.0.0", "127.0.0.1", 1)
			resp, err := http.Get(url)
			if err != nil {
				t.Fatalf("GET %s (line %q): %v", url, line, err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("GET %s: %d", url, resp.StatusCode)
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != ExitInterrupted {
				t.Errorf("after SIGINT: %v, want exit %d (stderr %q)", err, ExitInterrupted, stderr.String())
			}
			if got := strings.Contains(stderr.String(), "warning: listening on"); got != tt.warn {
				t.Errorf("warning printed: %v, want %v (stderr %q)", got, tt.warn, stderr.String())
			}
		})
	}
}
