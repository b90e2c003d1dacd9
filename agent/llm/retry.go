package llm

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"
)

// RetryPolicy is kagent's one retry policy for LLM calls, written down:
//
//   - retried: HTTP 429 and every 5xx, transport errors (connection refused or
//     reset, a reply cut off mid-body) and an attempt that ran past the
//     per-call timeout; not a host name that does not resolve;
//   - never retried: every other status (400, 401, 403, 404, ...), requests
//     the client library refused before sending, unreadable replies, and the
//     caller's own cancellation or deadline;
//   - the wait before retry n is jittered between half and all of
//     min(MaxDelay, BaseDelay·2^(n-1)); a Retry-After (or retry-after-ms) from
//     the provider replaces it, but one longer than MaxRetryAfter ends the
//     retries at once;
//   - every wait watches ctx, and no wait starts that would outlive the ctx
//     deadline;
//   - a call that gives up on a transport error, or is refused with 401 or
//     403, is an UnreachableError naming the provider and its URL (the run
//     stops on it: every further call would fail the same way).
type RetryPolicy struct {
	// MaxAttempts counts the first attempt too (default 5; 1 = no retries).
	MaxAttempts int `yaml:"max_attempts" json:"max_attempts,omitempty"`
	// BaseDelay is the backoff before the first retry (default 2s).
	BaseDelay time.Duration `yaml:"base_delay" json:"base_delay,omitempty"`
	// MaxDelay caps the backoff (default 60s).
	MaxDelay time.Duration `yaml:"max_delay" json:"max_delay,omitempty"`
	// MaxRetryAfter is the longest Retry-After honoured (default 5m).
	MaxRetryAfter time.Duration `yaml:"max_retry_after" json:"max_retry_after,omitempty"`
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = 5
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = 2 * time.Second
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = 60 * time.Second
	}
	if p.MaxRetryAfter == 0 {
		p.MaxRetryAfter = 5 * time.Minute
	}
	return p
}

func (p RetryPolicy) validate() error {
	if p.MaxAttempts < 0 || p.BaseDelay < 0 || p.MaxDelay < 0 || p.MaxRetryAfter < 0 {
		return errors.New("llm.retry: values must not be negative")
	}
	if p.MaxDelay < p.BaseDelay {
		return fmt.Errorf("llm.retry: max_delay %s is below base_delay %s", p.MaxDelay, p.BaseDelay)
	}
	return nil
}

// Backoff is the wait before retry n (n >= 1) given a uniform draw u in [0,1).
func (p RetryPolicy) Backoff(n int, u float64) time.Duration {
	d := p.BaseDelay
	for i := 1; i < n && d < p.MaxDelay; i++ {
		d *= 2
	}
	d = min(d, p.MaxDelay)
	return d/2 + time.Duration(u*float64(d/2))
}

// attemptError is the classified failure of one attempt.
type attemptError struct {
	err        error
	retryable  bool
	retryAfter time.Duration
	// unreachable: the connection failed, or the provider refused the key.
	unreachable bool
}

// classify decides about one failed attempt from what the transport saw.
func classify(provider string, err error, ci *callInfo, parent, attempt context.Context, timeout time.Duration, r *Redactor) attemptError {
	sent, status, retryAfter, body, netErr := ci.snapshot()
	switch {
	case parent.Err() != nil:
		return attemptError{err: err}
	case status >= 400:
		msg := errorMessage(body)
		if msg == "" {
			msg = clip(err.Error(), 500)
		}
		ae := &APIError{Provider: provider, StatusCode: status, Message: r.String(msg), RetryAfter: retryAfter}
		auth := status == http.StatusUnauthorized || status == http.StatusForbidden
		return attemptError{err: ae, retryable: ae.Temporary(), retryAfter: retryAfter, unreachable: auth}
	case errors.Is(attempt.Err(), context.DeadlineExceeded):
		return attemptError{err: fmt.Errorf("attempt timed out after %s: %w", timeout, err), retryable: true}
	case netErr != nil:
		// A host name that does not resolve (misspelt, or no network) does
		// not heal within a retry's wait: give up at once.
		var dns *net.DNSError
		notFound := (errors.As(netErr, &dns) || errors.As(err, &dns)) && dns.IsNotFound
		return attemptError{err: fmt.Errorf("transport: %w", err), retryable: !notFound, unreachable: true}
	case !sent:
		return attemptError{err: err} // refused by the client library before sending
	default:
		return attemptError{err: err} // 2xx with an unreadable or empty reply
	}
}

// retrier calls a provider under the retry policy and a per-attempt timeout,
// estimates the usage a reply left out (estimateUsage) and prices the reply.
type retrier struct {
	next     Client
	provider string
	// url is the server called, for the message of an unreachable provider.
	url     string
	policy  RetryPolicy
	timeout time.Duration
	cost    func(model string, u Usage) float64
	log     *slog.Logger
	redact  *Redactor
	now     func() time.Time
	sleep   func(ctx context.Context, d time.Duration) error
	rand    func() float64
	// withTimeout bounds one attempt (nil = context.WithTimeout).
	withTimeout func(context.Context, time.Duration) (context.Context, context.CancelFunc)
}

func (r *retrier) Complete(ctx context.Context, req Request) (Response, error) {
	start := r.now()
	var last error
	for attempt := 1; ; attempt++ {
		ci := &callInfo{}
		actx, cancel := ctx, context.CancelFunc(func() {})
		if r.timeout > 0 {
			withTimeout := r.withTimeout
			if withTimeout == nil {
				withTimeout = context.WithTimeout
			}
			actx, cancel = withTimeout(ctx, r.timeout)
		}
		resp, err := r.next.Complete(withCallInfo(actx, ci), req)
		cancel()
		if err == nil {
			resp.Duration = r.now().Sub(start)
			if resp.Provider == "" {
				resp.Provider = r.provider
			}
			resp.Usage = estimateUsage(req, resp, nil)
			resp.CostUSD = r.cost(req.Model, resp.Usage)
			return resp, nil
		}
		ae := classify(r.provider, err, ci, ctx, actx, r.timeout, r.redact)
		last = r.redact.Error(ae.err)
		if ctx.Err() != nil {
			return Response{}, fmt.Errorf("llm %s call: %w (last error: %v)", req.Purpose, context.Cause(ctx), last)
		}
		if !ae.retryable && ae.unreachable {
			return Response{}, fmt.Errorf("llm %s call: %w", req.Purpose, &UnreachableError{Provider: r.provider, URL: r.url, Err: last})
		}
		if !ae.retryable {
			// A failed reply can still have cost tokens (an empty reply that
			// used up max_tokens); pass its usage on to the meter.
			if resp.Usage = estimateUsage(req, resp, err); resp.Usage.Total() > 0 {
				resp.CostUSD = r.cost(req.Model, resp.Usage)
				resp.Duration = r.now().Sub(start)
				return resp, fmt.Errorf("llm %s call: %w", req.Purpose, last)
			}
			return Response{}, fmt.Errorf("llm %s call: %w", req.Purpose, last)
		}
		if attempt >= r.policy.MaxAttempts {
			if ae.unreachable {
				last = &UnreachableError{Provider: r.provider, URL: r.url, Err: last}
			}
			return Response{}, fmt.Errorf("llm %s call: giving up after %d attempts: %w", req.Purpose, attempt, last)
		}
		wait := r.policy.Backoff(attempt, r.rand())
		if ae.retryAfter > 0 {
			if ae.retryAfter > r.policy.MaxRetryAfter {
				return Response{}, fmt.Errorf("llm %s call: provider asks to retry after %s, more than max_retry_after %s: %w",
					req.Purpose, ae.retryAfter.Round(time.Second), r.policy.MaxRetryAfter, last)
			}
			wait = ae.retryAfter
		}
		if dl, ok := ctx.Deadline(); ok && r.now().Add(wait).After(dl) {
			return Response{}, fmt.Errorf("llm %s call: no time left to retry before the deadline: %w", req.Purpose, last)
		}
		r.log.Warn("llm call failed, retrying", "purpose", req.Purpose, "model", req.Model, "attempt", attempt,
			"max_attempts", r.policy.MaxAttempts, "wait", wait, "err", last)
		if err := r.sleep(ctx, wait); err != nil {
			return Response{}, fmt.Errorf("llm %s call: retry wait: %w (last error: %v)", req.Purpose, err, last)
		}
	}
}

// sleepCtx waits d or until ctx is done.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// Interface guards
var _ Client = (*retrier)(nil)
