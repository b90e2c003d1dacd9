package llm

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kagent-kernels/kagent/agent/llm/llmtest"
)

// stub answers every call with a fixed usage and cost.
type stub struct {
	usage Usage
	cost  float64
	delay time.Duration
}

func (s stub) Complete(ctx context.Context, req Request) (Response, error) {
	if s.delay > 0 {
		select {
		case <-time.After(s.delay):
		case <-ctx.Done():
			return Response{}, context.Cause(ctx)
		}
	}
	return Response{Text: "ok", Usage: s.usage, CostUSD: s.cost}, nil
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestMeterCaps(t *testing.T) {
	tests := []struct {
		name      string
		limits    Limits
		wantCalls int
		wantCap   string
	}{
		{"calls", Limits{MaxCalls: 3}, 3, "max_calls"},
		{"tokens", Limits{MaxTokens: 250}, 3, "max_tokens"}, // 100 per call: stops once 300 >= 250
		{"dollars", Limits{MaxUSD: 0.05}, 3, "max_usd"},     // $0.02 per call
		{"wall time", Limits{MaxWallTime: 35 * time.Second}, 4, "max_wall_time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := &fakeClock{t: time.Unix(0, 0)}
			m := NewMeter(stub{usage: Usage{PromptTokens: 60, CompletionTokens: 40}, cost: 0.02}, tt.limits, WithMeterClock(clk.now))
			calls := 0
			var err error
			for range 10 {
				_, err = m.Complete(context.Background(), Request{Purpose: PurposeOptimize})
				if err != nil {
					break
				}
				calls++
				clk.advance(10 * time.Second)
			}
			var be *BudgetExceededError
			if !errors.As(err, &be) || be.Cap != tt.wantCap || !errors.Is(err, ErrBudgetExceeded) {
				t.Fatalf("err = %v, want cap %s", err, tt.wantCap)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d calls before the stop, want %d", calls, tt.wantCalls)
			}
			if !strings.Contains(err.Error(), tt.wantCap) || !strings.Contains(err.Error(), "no further llm calls") {
				t.Errorf("message unclear: %v", err)
			}
			st := m.Stats()
			if st.Calls != calls || st.Stopped != tt.wantCap || m.Check() == nil {
				t.Errorf("stats = %+v, check = %v", st, m.Check())
			}
		})
	}
}

// TestMeterWallTimeCutsCallInFlight: a call admitted in time (the meter's
// clock stands still) is cut off when the wall-time cap passes during it
// (50 ms of real time; the call would take an hour).
func TestMeterWallTimeCutsCallInFlight(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	m := NewMeter(stub{delay: time.Hour}, Limits{MaxWallTime: 50 * time.Millisecond}, WithMeterClock(clk.now))
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		_, err = m.Complete(context.Background(), Request{Purpose: PurposeDiagnose})
	}()
	await(t, done, "the call in flight was not cut off at the wall-time cap")
	var be *BudgetExceededError
	if !errors.As(err, &be) || be.Cap != "max_wall_time" || !strings.Contains(be.Used, "cut off a call in flight") {
		t.Fatalf("err = %v, want the wall-time cap cutting off the call in flight", err)
	}
}

func TestMeterConcurrent(t *testing.T) {
	m := NewMeter(stub{usage: Usage{PromptTokens: 10, CompletionTokens: 5}, cost: 0.001}, Limits{MaxCalls: 50}, WithConcurrency(4))
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	purposes := []Purpose{PurposeDiagnose, PurposeOptimize, PurposeReflect}
	for i := range 80 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := m.Complete(context.Background(), Request{Purpose: purposes[i%3]}); err != nil {
				mu.Lock()
				refused++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	st := m.Stats()
	if st.Calls != 50 || refused != 30 || st.PromptTokens != 500 || st.CompletionTokens != 250 {
		t.Errorf("stats %+v, refused %d", st.Totals, refused)
	}
	sum := 0
	for _, p := range st.ByPurpose {
		sum += p.Calls
	}
	if sum != 50 || len(st.ByPurpose) != 3 {
		t.Errorf("by purpose = %+v", st.ByPurpose)
	}
}

// The budget ends a run through New's stack, with the fake server.
func TestBudgetThroughNew(t *testing.T) {
	srv := llmtest.NewServer(t)
	srv.Default(llmtest.Reply{Text: "ok", PromptTokens: 1_000_000, CompletionTokens: 100_000})
	c, _ := newClient(t, Config{Provider: "openai", BaseURL: srv.BaseURL(), Model: "fake",
		Prices: map[string]Price{"fake": {Input: 1, Output: 10}}, Budget: Limits{MaxUSD: 5}})
	n := 0
	var err error
	for ; n < 10; n++ {
		if _, err = c.Complete(context.Background(), user("x")); err != nil {
			break
		}
	}
	if !errors.Is(err, ErrBudgetExceeded) || n != 3 || srv.Count() != 3 {
		t.Fatalf("err %v after %d calls, %d requests", err, n, srv.Count())
	}
	st := c.(StatsReporter).Stats()
	if st.CostUSD != 6 || st.ByPurpose[PurposeOptimize].Calls != 3 {
		t.Errorf("stats = %+v", st)
	}
}

func TestMaxUSDNeedsPrice(t *testing.T) {
	_, err := New(Config{Provider: "ollama", Model: "m", Budget: Limits{MaxUSD: 1}})
	if err == nil || !strings.Contains(err.Error(), "no price for model") {
		t.Fatalf("err = %v", err)
	}
}
