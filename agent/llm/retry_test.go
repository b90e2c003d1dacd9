package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
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

// hangGuard bounds a wait for something that happens at once unless the
// code under test is broken: a guard for a hung test, never a timing
// assertion.
const hangGuard = 2 * time.Minute

// await waits for done and fails the test, saying stuck, after hangGuard.
func await(t *testing.T, done <-chan struct{}, stuck string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(hangGuard):
		t.Fatal(stuck)
	}
}

// TestCancellationStopsBackoff: a cancellation during the (real) retry
// wait, of half an hour or more, ends it at once.
func TestCancellationStopsBackoff(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Status: 503, Text: "down"})
	cfg := fakeCfg(srv)
	cfg.Retry = RetryPolicy{MaxAttempts: 10, BaseDelay: time.Hour, MaxDelay: time.Hour}
	waiting := make(chan struct{})
	var once sync.Once
	sleep := func(ctx context.Context, d time.Duration) error {
		once.Do(func() { close(waiting) })
		return sleepCtx(ctx, d) // the real wait
	}
	c, err := New(cfg, WithSleep(sleep))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err = c.Complete(ctx, user("x"))
	}()
	await(t, waiting, "the client never began its retry wait")
	cancel()
	await(t, done, "the retry wait went on after the cancellation")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if srv.Count() != 1 {
		t.Errorf("%d requests", srv.Count())
	}
}

// TestNoWaitPastDeadline: a retry wait (45 minutes) that would outlive
// the ctx deadline (30 minutes away) is not started.
func TestNoWaitPastDeadline(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Status: 503})
	cfg := fakeCfg(srv)
	cfg.Retry.BaseDelay, cfg.Retry.MaxDelay = time.Hour, time.Hour
	c, s := newClient(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	_, err := c.Complete(ctx, user("x"))
	if err == nil || !strings.Contains(err.Error(), "no time left") || len(s.waits()) != 0 || srv.Count() != 1 {
		t.Fatalf("err = %v after waits %v and %d requests", err, s.waits(), srv.Count())
	}
}

// expiring is an attempt's context whose deadline passes when expire is
// called: a fake clock for one attempt.
type expiring struct {
	context.Context
	done chan struct{}
	once sync.Once
}

func newExpiring(parent context.Context) *expiring {
	return &expiring{Context: parent, done: make(chan struct{})}
}

func (e *expiring) Deadline() (time.Time, bool) { return time.Time{}, false }
func (e *expiring) Done() <-chan struct{}       { return e.done }
func (e *expiring) expire()                     { e.once.Do(func() { close(e.done) }) }

func (e *expiring) Err() error {
	select {
	case <-e.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// TestPerCallTimeoutIsRetried: an attempt that runs past the per-call
// timeout is retried. The first attempt's timeout passes once the server
// holds its request (whose reply would take an hour); the retry's is a
// guard, so that a busy machine cannot make it late too.
func TestPerCallTimeoutIsRetried(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Enqueue(llmtest.Reply{Text: "late", Delay: time.Hour}, llmtest.Reply{Text: "on time"})
	cfg := fakeCfg(srv)
	cfg.Timeout = 100 * time.Millisecond
	var attempts atomic.Int32
	withTimeout := func(o *options) {
		o.withTimeout = func(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
			if attempts.Add(1) > 1 {
				return context.WithTimeout(ctx, hangGuard)
			}
			e := newExpiring(ctx)
			go func() {
				for srv.Count() == 0 {
					select {
					case <-e.done:
						return
					case <-time.After(time.Millisecond):
					}
				}
				e.expire()
			}()
			return e, e.expire
		}
	}
	c, s := newClient(t, cfg, withTimeout)
	done := make(chan struct{})
	var resp Response
	var err error
	go func() {
		defer close(done)
		resp, err = c.Complete(context.Background(), user("x"))
	}()
	await(t, done, "the call still waits after its attempt's timeout")
	if err != nil || resp.Text != "on time" {
		t.Fatalf("resp %q, err %v", resp.Text, err)
	}
	if attempts.Load() != 2 || srv.Count() != 2 || len(s.waits()) != 1 {
		t.Errorf("%d attempts, %d requests, waits %v: want one retry of the late call", attempts.Load(), srv.Count(), s.waits())
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

// TestNoRetryOnUnknownHost: a host name that does not resolve ends the call
// at once as an unreachable provider; a refused connection is retried.
func TestNoRetryOnUnknownHost(t *testing.T) {
	for _, tc := range []struct {
		name     string
		err      error
		attempts int
	}{
		{"no such host", &net.DNSError{Err: "no such host", Name: "llm.example.invalid", IsNotFound: true}, 1},
		{"resolver timed out", &net.DNSError{Err: "i/o timeout", Name: "llm.example.invalid", IsTimeout: true}, 4},
		{"connection refused", &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			rt := roundTripFunc(func(*http.Request) (*http.Response, error) {
				calls.Add(1)
				return nil, tc.err
			})
			cfg := Config{Provider: "openai", BaseURL: "http://llm.example.invalid/v1", Model: "fake",
				Retry: RetryPolicy{MaxAttempts: 4, BaseDelay: time.Second, MaxDelay: 8 * time.Second}}
			c, _ := newClient(t, cfg, WithTransport(rt))
			_, err := c.Complete(context.Background(), user("x"))
			if !errors.Is(err, ErrUnreachable) || !strings.Contains(err.Error(), "llm.example.invalid") {
				t.Errorf("err = %v, want an unreachable provider naming its URL", err)
			}
			if int(calls.Load()) != tc.attempts {
				t.Errorf("%d attempts, want %d", calls.Load(), tc.attempts)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
