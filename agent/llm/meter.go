package llm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"
)

// Totals add up calls of one kind.
type Totals struct {
	Calls            int   `json:"calls"`
	Failed           int   `json:"failed"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	// EstimatedCalls counts the calls whose usage kagent estimated.
	EstimatedCalls int           `json:"estimated_calls,omitempty"`
	CostUSD        float64       `json:"cost_usd"`
	CallTime       time.Duration `json:"call_time_ns"` // summed over calls; concurrent calls overlap
}

// Tokens is prompt plus completion tokens.
func (t Totals) Tokens() int64 { return t.PromptTokens + t.CompletionTokens }

func (t *Totals) add(resp Response, err error, d time.Duration) {
	t.Calls++
	if err != nil {
		t.Failed++
	}
	t.PromptTokens += int64(resp.Usage.PromptTokens)
	t.CompletionTokens += int64(resp.Usage.CompletionTokens)
	if resp.Usage.Estimated {
		t.EstimatedCalls++
	}
	t.CostUSD += resp.CostUSD
	t.CallTime += d
}

// Stats is a Meter's account of a run.
type Stats struct {
	Totals
	// Elapsed is the wall time since the meter started.
	Elapsed   time.Duration      `json:"elapsed_ns"`
	ByPurpose map[Purpose]Totals `json:"by_purpose,omitempty"`
	// ByModel splits the account by the model that answered (the requested
	// one for a call that failed before any answered).
	ByModel map[string]Totals `json:"by_model,omitempty"`
	// Stopped names the cap that stopped calls ("" while none has).
	Stopped string `json:"stopped,omitempty"`
}

// Meter wraps a Client and accounts for every call: calls, tokens, dollars,
// wall time, in total, per purpose and per model. Once a cap of its Limits is reached it
// refuses further calls with a *BudgetExceededError, which the loop turns into
// a clean stop. Calls already in flight finish (and are counted), so tokens and
// dollars can pass their cap by what those calls use; the call cap is exact,
// and the wall-time cap also cuts off calls in flight. Safe for concurrent use.
type Meter struct {
	next   Client
	limits Limits
	now    func() time.Time
	start  time.Time
	sem    chan struct{} // nil: no concurrency cap

	mu        sync.Mutex
	total     Totals
	byPurpose map[Purpose]*Totals
	byModel   map[string]*Totals
	inflight  int
	stopped   string
}

// MeterOption configures a Meter.
type MeterOption func(*Meter)

// WithMeterClock sets the clock (tests).
func WithMeterClock(now func() time.Time) MeterOption { return func(m *Meter) { m.now = now } }

// WithConcurrency caps calls in flight at once; further calls wait (watching
// their ctx). n <= 0 means no cap.
func WithConcurrency(n int) MeterOption {
	return func(m *Meter) {
		if n > 0 {
			m.sem = make(chan struct{}, n)
		}
	}
}

// NewMeter wraps next. The wall-time cap counts from now.
func NewMeter(next Client, limits Limits, opts ...MeterOption) *Meter {
	m := &Meter{next: next, limits: limits, now: time.Now, byPurpose: map[Purpose]*Totals{}, byModel: map[string]*Totals{}}
	for _, o := range opts {
		o(m)
	}
	m.start = m.now()
	return m
}

// Complete checks the caps, then calls the wrapped client and counts the call.
func (m *Meter) Complete(ctx context.Context, req Request) (Response, error) {
	if m.sem != nil {
		select {
		case m.sem <- struct{}{}:
			defer func() { <-m.sem }()
		case <-ctx.Done():
			return Response{}, fmt.Errorf("llm %s call: wait for a free slot: %w", req.Purpose, context.Cause(ctx))
		}
	}
	if err := m.admit(); err != nil {
		return Response{}, err
	}
	if m.limits.MaxWallTime > 0 {
		left := m.limits.MaxWallTime - m.now().Sub(m.start)
		var cancel context.CancelFunc
		cause := &BudgetExceededError{Cap: "max_wall_time", Limit: m.limits.MaxWallTime.String(),
			Used: m.limits.MaxWallTime.String() + " (cut off a call in flight)"}
		ctx, cancel = context.WithTimeoutCause(ctx, left, cause)
		defer cancel()
	}
	t0 := m.now()
	resp, err := m.next.Complete(ctx, req)
	d := m.now().Sub(t0)
	var be *BudgetExceededError
	if err != nil && ctx.Err() != nil && errors.As(context.Cause(ctx), &be) {
		err = fmt.Errorf("llm %s call: %w", req.Purpose, be)
		m.mu.Lock()
		if m.stopped == "" {
			m.stopped = be.Cap
		}
		m.mu.Unlock()
	}

	m.mu.Lock()
	defer m.mu.Unlock()
	m.inflight--
	m.total.add(resp, err, d)
	t := m.byPurpose[req.Purpose]
	if t == nil {
		t = &Totals{}
		m.byPurpose[req.Purpose] = t
	}
	t.add(resp, err, d)
	model := resp.Model
	if model == "" {
		model = req.Model
	}
	tm := m.byModel[model]
	if tm == nil {
		tm = &Totals{}
		m.byModel[model] = tm
	}
	tm.add(resp, err, d)
	return resp, err
}

// admit reserves a call or says which cap is reached.
func (m *Meter) admit() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.capReached(m.total.Calls + m.inflight); err != nil {
		if m.stopped == "" {
			m.stopped = err.Cap
		}
		return err
	}
	m.inflight++
	return nil
}

// Check reports a reached cap as a *BudgetExceededError, nil otherwise. The
// loop calls it before starting work that needs the LLM.
func (m *Meter) Check() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.capReached(m.total.Calls + m.inflight); err != nil {
		return err
	}
	return nil
}

// capReached must be called with mu held. calls counts reserved calls.
func (m *Meter) capReached(calls int) *BudgetExceededError {
	l := m.limits
	switch {
	case l.MaxWallTime > 0 && m.now().Sub(m.start) >= l.MaxWallTime:
		return m.wallErr()
	case l.MaxCalls > 0 && calls >= l.MaxCalls:
		return &BudgetExceededError{Cap: "max_calls", Limit: fmt.Sprint(l.MaxCalls), Used: fmt.Sprintf("%d calls", calls)}
	case l.MaxTokens > 0 && m.total.Tokens() >= l.MaxTokens:
		return &BudgetExceededError{Cap: "max_tokens", Limit: fmt.Sprint(l.MaxTokens),
			Used: fmt.Sprintf("%d tokens%s", m.total.Tokens(), estimatedCalls(m.total))}
	case l.MaxUSD > 0 && m.total.CostUSD >= l.MaxUSD:
		return &BudgetExceededError{Cap: "max_usd", Limit: fmt.Sprintf("$%.2f", l.MaxUSD),
			Used: fmt.Sprintf("$%.4f%s", m.total.CostUSD, estimatedCalls(m.total))}
	}
	return nil
}

// estimatedCalls says how many calls' tokens were estimated ("" for none).
func estimatedCalls(t Totals) string {
	if t.EstimatedCalls == 0 {
		return ""
	}
	return fmt.Sprintf(", the tokens of %d of %d calls estimated", t.EstimatedCalls, t.Calls)
}

func (m *Meter) wallErr() *BudgetExceededError {
	return &BudgetExceededError{Cap: "max_wall_time", Limit: m.limits.MaxWallTime.String(),
		Used: m.now().Sub(m.start).Round(time.Millisecond).String()}
}

// Stats returns a copy of the account so far.
func (m *Meter) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{Totals: m.total, Elapsed: m.now().Sub(m.start), ByPurpose: map[Purpose]Totals{},
		ByModel: map[string]Totals{}, Stopped: m.stopped}
	for p, t := range maps.All(m.byPurpose) {
		s.ByPurpose[p] = *t
	}
	for model, t := range maps.All(m.byModel) {
		s.ByModel[model] = *t
	}
	return s
}

// Interface guards
var (
	_ Client        = (*Meter)(nil)
	_ StatsReporter = (*Meter)(nil)
)
