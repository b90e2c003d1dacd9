package llm

import (
	"context"
	"sync"
	"testing"
	"time"
)

// env is a fake environment for WithEnv.
type env map[string]string

func (e env) opt() Option {
	return WithEnv(func(k string) string { return e[k] }, func() []string {
		var out []string
		for k, v := range e {
			out = append(out, k+"="+v)
		}
		return out
	})
}

// sleeps records retry waits without sleeping.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// newClient builds a client with no real waits and jitter fixed at 0.5.
func newClient(t *testing.T, cfg Config, opts ...Option) (Client, *sleeps) {
	t.Helper()
	s := &sleeps{}
	c, err := New(cfg, append([]Option{WithSleep(s.sleep), WithRand(func() float64 { return 0.5 })}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, s
}

func user(prompt string) Request {
	return Request{Messages: []Message{System("You are terse."), User(prompt)}, Purpose: PurposeOptimize}
}

func ptr[T any](v T) *T { return &v }
