package llm

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
)

// redacted replaces a secret wherever it would be written.
const redacted = "[REDACTED]"

// minSecretLen is the shortest value treated as a secret; shorter values (a
// "1" in some *_TOKEN variable) would only mangle unrelated text.
const minSecretLen = 8

// secretEnvHints mark an environment variable's value as a secret when its
// name contains one of them.
var secretEnvHints = []string{"API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "ACCESS_KEY"}

// Redactor replaces known secret values in text. The zero value redacts
// nothing; a nil *Redactor is valid too. Safe for concurrent use once built.
type Redactor struct {
	secrets []string // longest first, so a secret containing another is replaced whole
}

// NewRedactor returns a Redactor for the given secret values. Values shorter
// than 8 bytes are ignored.
func NewRedactor(secrets ...string) *Redactor {
	r := &Redactor{}
	r.add(secrets...)
	return r
}

// EnvRedactor returns a Redactor for the values of the named environment
// variables and of every variable whose name looks like it holds a secret
// (contains API_KEY, TOKEN, SECRET, PASSWORD or ACCESS_KEY).
func EnvRedactor(getenv func(string) string, environ []string, names ...string) *Redactor {
	if getenv == nil {
		getenv = os.Getenv
	}
	var vals []string
	for _, n := range names {
		vals = append(vals, getenv(n))
	}
	for _, kv := range environ {
		name, val, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		upper := strings.ToUpper(name)
		for _, h := range secretEnvHints {
			if strings.Contains(upper, h) {
				vals = append(vals, val)
				break
			}
		}
	}
	return NewRedactor(vals...)
}

func (r *Redactor) add(secrets ...string) {
	for _, s := range secrets {
		s = strings.TrimSpace(s)
		if len(s) >= minSecretLen && !slices.Contains(r.secrets, s) {
			r.secrets = append(r.secrets, s)
		}
	}
	slices.SortFunc(r.secrets, func(a, b string) int { return len(b) - len(a) })
}

// String returns s with every secret replaced by [REDACTED].
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, sec := range r.secrets {
		if strings.Contains(s, sec) {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	return s
}

// Bytes is String for byte slices.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(r.secrets) == 0 {
		return b
	}
	return []byte(r.String(string(b)))
}

// Error wraps err so that its message is redacted; errors.Is and errors.As
// still see the original chain. Returns nil for nil.
func (r *Redactor) Error(err error) error {
	if err == nil || r == nil {
		return err
	}
	msg := err.Error()
	if red := r.String(msg); red != msg {
		return &redactedError{msg: red, err: err}
	}
	return err
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Handler wraps h so that every message and attribute it writes is redacted.
func (r *Redactor) Handler(h slog.Handler) slog.Handler {
	if r == nil {
		return h
	}
	return &redactHandler{h: h, r: r}
}

type redactHandler struct {
	h slog.Handler
	r *Redactor
}

func (h *redactHandler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *redactHandler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, h.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(h.r.attr(a))
		return true
	})
	return h.h.Handle(ctx, out)
}

func (h *redactHandler) WithAttrs(as []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(as))
	for i, a := range as {
		red[i] = h.r.attr(a)
	}
	return &redactHandler{h: h.h.WithAttrs(red), r: h.r}
}

func (h *redactHandler) WithGroup(name string) slog.Handler {
	return &redactHandler{h: h.h.WithGroup(name), r: h.r}
}

func (r *Redactor) attr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, r.String(v.String()))
	case slog.KindGroup:
		g := v.Group()
		red := make([]any, len(g))
		for i, ga := range g {
			red[i] = r.attr(ga)
		}
		return slog.Group(a.Key, red...)
	case slog.KindAny:
		s := fmt.Sprint(v.Any())
		if red := r.String(s); red != s {
			return slog.String(a.Key, red)
		}
		return slog.Attr{Key: a.Key, Value: v}
	default:
		return slog.Attr{Key: a.Key, Value: v}
	}
}
