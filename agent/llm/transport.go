package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Every provider library is given an *http.Client whose transport records, in
// a callInfo carried by the request context, what happened on the wire: the
// status code, Retry-After, the start of an error body, a transport error.
// The retry policy decides from that record, not from each library's own
// error strings, so one policy serves go-openai and langchaingo alike.

type callInfoKey struct{}

// callInfo is what the transport saw during one attempt.
type callInfo struct {
	mu         sync.Mutex
	sent       bool
	status     int
	retryAfter time.Duration
	body       string
	netErr     error
}

func withCallInfo(ctx context.Context, ci *callInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, ci)
}

func callInfoFrom(ctx context.Context) *callInfo {
	ci, _ := ctx.Value(callInfoKey{}).(*callInfo)
	return ci
}

func (ci *callInfo) snapshot() (sent bool, status int, retryAfter time.Duration, body string, netErr error) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.sent, ci.status, ci.retryAfter, ci.body, ci.netErr
}

// errBodyLimit bounds how much of an error body is kept.
const errBodyLimit = 64 << 10

// captureTransport records responses into the request's callInfo.
type captureTransport struct {
	base http.RoundTripper
	// header is added to every request (Gemini's x-goog-api-key).
	header http.Header
	// mapError rewrites an error response before the library sees it (nil:
	// none). The Gemini REST client retries 503 by itself; showing it a 500
	// leaves the one retry policy in charge. callInfo keeps the original.
	mapError func(status int, body []byte) (int, []byte)
	now      func() time.Time
}

func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.header) > 0 {
		req = req.Clone(req.Context())
		for k, vs := range t.header {
			req.Header[k] = vs
		}
	}
	ci := callInfoFrom(req.Context())
	if ci != nil {
		ci.mu.Lock()
		ci.sent = true
		ci.mu.Unlock()
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		if ci != nil {
			ci.mu.Lock()
			ci.netErr = err
			ci.mu.Unlock()
		}
		return nil, err
	}
	if ci == nil {
		return resp, nil
	}
	ci.mu.Lock()
	defer ci.mu.Unlock()
	ci.status = resp.StatusCode
	if resp.StatusCode >= 400 {
		b, rerr := io.ReadAll(io.LimitReader(resp.Body, errBodyLimit))
		resp.Body.Close()
		if rerr != nil {
			ci.netErr = rerr
		}
		ci.body = string(b)
		ci.retryAfter = parseRetryAfter(resp.Header, t.now())
		if t.mapError != nil {
			if s, nb := t.mapError(resp.StatusCode, b); s != resp.StatusCode {
				resp.StatusCode, b = s, nb
				resp.Status = strconv.Itoa(s) + " " + http.StatusText(s)
				resp.ContentLength = int64(len(b))
				resp.Header.Del("Content-Length")
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		return resp, nil
	}
	resp.Body = &recordingBody{ReadCloser: resp.Body, ci: ci}
	return resp, nil
}

// recordingBody notes a read error of a successful response (a connection
// cut mid-reply), which makes the attempt retryable.
type recordingBody struct {
	io.ReadCloser
	ci *callInfo
}

func (b *recordingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.ci.mu.Lock()
		b.ci.netErr = err
		b.ci.mu.Unlock()
	}
	return n, err
}

// parseRetryAfter reads retry-after-ms (OpenAI) or Retry-After (seconds or an
// HTTP date). 0 when absent or unreadable.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// errorMessage pulls the human message out of a provider's error body:
// {"error":{"message":...}} (OpenAI, Anthropic, Gemini), {"message":...}
// (Bedrock), {"error":"..."} (Ollama), else the text itself.
func errorMessage(body string) string {
	body = strings.TrimSpace(body)
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal([]byte(body), &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return clip(inner.Message, 500)
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return clip(s, 500)
		case v.Message != "":
			return clip(v.Message, 500)
		}
	}
	return clip(body, 500)
}

// clip cuts s to at most n bytes, marking the cut.
func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// googleNoRetry shows the Google client a 503 as a 500, body included (its
// error code is read from the body), so that it does not retry by itself.
func googleNoRetry(status int, body []byte) (int, []byte) {
	if status != http.StatusServiceUnavailable {
		return status, body
	}
	nb, _ := json.Marshal(map[string]any{"error": map[string]any{
		"code": http.StatusInternalServerError, "message": errorMessage(string(body)) + " (503 Service Unavailable)",
	}})
	return http.StatusInternalServerError, nb
}
