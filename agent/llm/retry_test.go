package llm

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kagent-dev/kagent/agent/llm/llmtest"
)

func fakeCfg(srv *llmtest.Server) Config {
	return Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake",
		Retry: RetryPolicy{MaxAttempts: 4, BaseDelay: time.Second, MaxDelay: 8 * time.Second}}
}

func TestRetryThenSuccess(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(
		llmtest.Reply{Status: 429, Text: "slow down"},
		llmtest.Reply{Status: 503, Text: "overloaded"},
		llmtest.Reply{Drop: true},
		llmtest.Reply{Text: "done"},
	)
	c, s := newClient(t, fakeCfg(srv))
	resp, err := c.Complete(context.Background(), user("x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "done" || srv.Count() != 4 {
		t.Fatalf("text %q after %d requests", resp.Text, srv.Count())
	}
	// Jitter fixed at 0.5: each wait is 3/4 of the doubled base, capped.
	want := []time.Duration{750 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second}
	if got := s.waits(); !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

func TestRetryHonoursRetryAfter(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "7"}, llmtest.Reply{Text: "ok"})
	c, s := newClient(t, fakeCfg(srv))
	if _, err := c.Complete(context.Background(), user("x")); err != nil {
		t.Fatal(err)
	}
	if got := s.waits(); !slices.Equal(got, []time.Duration{7 * time.Second}) {
		t.Errorf("waits = %v, want [7s]", got)
	}
}

func TestRetryAfterTooLongGivesUp(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Reply{Status: 429, RetryAfter: "3600"}, llmtest.Reply{Text: "ok"})
	c, _ := newClient(t, fakeCfg(srv))
	_, err := c.Complete(context.Background(), user("x"))
	if err == nil || !strings.Contains(err.Error(), "max_retry_after") || srv.Count() != 1 {
		t.Fatalf("err = %v after %d requests", err, srv.Count())
	}
}

func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{400, 401, 403, 404} {
		t.Run(http.StatusText(status), func(t *testing.T) {
			srv := llmtest.NewServer(t)
			srv.Enqueue(llmtest.Reply{Status: status, Text: "nope"}, llmtest.Reply{Text: "ok"})
			c, s := newClient(t, fakeCfg(srv))
			_, err := c.Complete(context.Background(), user("x"))
			var ae *APIError
			if !errors.As(err, &ae) || ae.StatusCode != status || ae.Message != "nope" {
				t.Fatalf("err = %v, want *APIError %d", err, status)
			}
			if srv.Count() != 1 || len(s.waits()) != 0 {
				t.Errorf("retried: %d requests, waits %v", srv.Count(), s.waits())
			}
			if status == 401 && !strings.Contains(err.Error(), "check the api key") {
				t.Errorf("401 message does not help: %v", err)
			}
		})
	}
}

func TestRetryGivesUpAfterMaxAttempts(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Status: 502, Text: "bad gateway"})
	c, _ := newClient(t, fakeCfg(srv))
	_, err := c.Complete(context.Background(), user("x"))
	var ae *APIError
	if !errors.As(err, &ae) || ae.StatusCode != 502 || !strings.Contains(err.Error(), "giving up after 4 attempts") {
		t.Fatalf("err = %v", err)
	}
	if srv.Count() != 4 {
		t.Errorf("%d requests, want 4", srv.Count())
	}
}

func TestCancellationStopsBackoff(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Status: 503, Text: "down"})
	cfg := fakeCfg(srv)
	cfg.Retry = RetryPolicy{MaxAttempts: 10, BaseDelay: 30 * time.Second, MaxDelay: time.Minute}
	c, err := New(cfg) // real sleeps
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	_, err = c.Complete(ctx, user("x"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancellation took %v", d)
	}
	if srv.Count() != 1 {
		t.Errorf("%d requests", srv.Count())
	}
}

func TestNoWaitPastDeadline(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Status: 503})
	cfg := fakeCfg(srv)
	cfg.Retry.BaseDelay, cfg.Retry.MaxDelay = time.Hour, time.Hour
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Complete(ctx, user("x"))
	if err == nil || !strings.Contains(err.Error(), "no time left") || time.Since(start) > 2*time.Second {
		t.Fatalf("err = %v after %v", err, time.Since(start))
	}
}

func TestPerCallTimeoutIsRetried(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Reply{Text: "late", Delay: 5 * time.Second}, llmtest.Reply{Text: "on time"})
	cfg := fakeCfg(srv)
	cfg.Timeout = 100 * time.Millisecond
	c, _ := newClient(t, cfg)
	resp, err := c.Complete(context.Background(), user("x"))
	if err != nil || resp.Text != "on time" {
		t.Fatalf("resp %q, err %v", resp.Text, err)
	}
}

func TestBackoffIsCappedAndJittered(t *testing.T) {
	p := RetryPolicy{BaseDelay: time.Second, MaxDelay: 10 * time.Second}
	for _, tt := range []struct {
		n    int
		u    float64
		want time.Duration
	}{
		{1, 0, 500 * time.Millisecond}, {1, 0.5, 750 * time.Millisecond},
		{3, 0, 2 * time.Second}, {4, 1, 8 * time.Second}, {5, 0, 5 * time.Second}, {60, 1, 10 * time.Second},
	} {
		if got := p.Backoff(tt.n, tt.u).Round(time.Microsecond); got != tt.want {
			t.Errorf("Backoff(%d, %v) = %v, want %v", tt.n, tt.u, got, tt.want)
		}
	}
}
