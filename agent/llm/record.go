package llm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/kagent-kernels/kagent/internal/safefile"
)

// recordVersion is the format version of exchange files.
const recordVersion = 1

// Exchange is one recorded call: what was asked and what came back. It is
// stored as <purpose>-<fingerprint[:16]>-<n>.json, n counting repeats of the
// same request from 1.
type Exchange struct {
	Version     int    `json:"version"`
	Fingerprint string `json:"fingerprint"`
	N           int    `json:"n"`
	// Seq orders exchanges as they were recorded (from 1; 0 in files written
	// by hand, which are ordered by file name).
	Seq      int      `json:"seq,omitempty"`
	Request  Request  `json:"request"`
	Response Response `json:"response"`
}

// Fingerprint identifies a request for replay: a SHA-256 over the model, the
// messages and the purpose. Token limits, temperature and reasoning effort do
// not change it.
func Fingerprint(req Request) string {
	b, _ := json.Marshal(struct {
		Model    string    `json:"model"`
		Messages []Message `json:"messages"`
		Purpose  Purpose   `json:"purpose"`
	}{req.Model, req.Messages, req.Purpose})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func exchangeFile(e Exchange) string {
	p := string(e.Request.Purpose)
	if p == "" {
		p = "call"
	}
	return fmt.Sprintf("%s-%s-%03d.json", safeName(p), e.Fingerprint[:16], e.N)
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' {
			return r
		}
		return '_'
	}, s)
}

// Recorder wraps a Client and saves every successful exchange as a JSON file
// in a directory (--llm-record). Secrets are redacted from what it writes.
// Safe for concurrent use.
type Recorder struct {
	next   Client
	dir    string
	redact *Redactor

	mu   sync.Mutex
	seen map[string]int // fingerprint -> exchanges saved
	seq  int
}

// NewRecorder creates dir if needed. Exchanges already in dir are kept; new
// repeats of the same request are numbered after them.
func NewRecorder(next Client, dir string, r *Redactor) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("new recorder: %w", err)
	}
	ex, err := loadExchanges(dir)
	if err != nil {
		return nil, fmt.Errorf("new recorder: %w", err)
	}
	rec := &Recorder{next: next, dir: dir, redact: r, seen: map[string]int{}}
	for _, e := range ex {
		rec.seen[e.Fingerprint] = max(rec.seen[e.Fingerprint], e.N)
		rec.seq = max(rec.seq, e.Seq)
	}
	return rec, nil
}

// Complete calls the wrapped client and saves the exchange if it succeeded.
func (r *Recorder) Complete(ctx context.Context, req Request) (Response, error) {
	resp, err := r.next.Complete(ctx, req)
	if err != nil {
		return resp, err
	}
	fp := Fingerprint(req)
	r.mu.Lock()
	r.seen[fp]++
	r.seq++
	e := Exchange{Version: recordVersion, Fingerprint: fp, N: r.seen[fp], Seq: r.seq, Request: req, Response: resp}
	r.mu.Unlock()
	if werr := r.write(e); werr != nil {
		return resp, fmt.Errorf("record llm %s exchange: %w", req.Purpose, werr)
	}
	return resp, nil
}

func (r *Recorder) write(e Exchange) error {
	b, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	b = append(r.redact.Bytes(b), '\n')
	name := filepath.Join(r.dir, exchangeFile(e))
	tmp, err := os.CreateTemp(r.dir, ".exchange-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), name)
}

// loadExchanges reads every exchange file of dir, sorted by name.
func loadExchanges(dir string) ([]Exchange, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []Exchange
	for _, n := range names {
		b, err := safefile.Read(dir, filepath.Base(n), safefile.MaxJSON)
		if err != nil {
			return nil, fmt.Errorf("read exchange: %w", err)
		}
		var e Exchange
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("read exchange %s: %w", n, err)
		}
		if e.Version != recordVersion || e.Fingerprint == "" {
			return nil, fmt.Errorf("read exchange %s: not a kagent llm record (version %d)", n, e.Version)
		}
		out = append(out, e)
	}
	return out, nil
}

// nearest describes the recorded exchange most like req: same purpose first,
// then same model, then the longest common prefix of the messages.
func (r *Replayer) nearest(req Request) string {
	best, bestScore := -1, -1
	for i, e := range r.all {
		score := commonPrefix(joinMessages(e.Request.Messages), joinMessages(req.Messages))
		if e.Request.Model == req.Model {
			score += 1 << 40
		}
		if e.Request.Purpose == req.Purpose {
			score += 1 << 50
		}
		if score > bestScore {
			best, bestScore = i, score
		}
	}
	if best < 0 {
		return ""
	}
	e := r.all[best]
	desc := fmt.Sprintf("%s (purpose %q, model %q", exchangeFile(e), e.Request.Purpose, e.Request.Model)
	if d := firstDifference(e.Request.Messages, req.Messages); d != "" {
		desc += ", " + d
	}
	return desc + ")"
}

func joinMessages(ms []Message) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(string(m.Role))
		b.WriteByte(0)
		b.WriteString(m.Content)
		b.WriteByte(0)
	}
	return b.String()
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// firstDifference says where two conversations part.
func firstDifference(rec, req []Message) string {
	for i := range max(len(rec), len(req)) {
		switch {
		case i >= len(rec):
			return fmt.Sprintf("the request has %d messages, the record %d", len(req), len(rec))
		case i >= len(req):
			return fmt.Sprintf("the record has %d messages, the request %d", len(rec), len(req))
		case rec[i].Role != req[i].Role:
			return fmt.Sprintf("message %d is %s in the record, %s in the request", i, rec[i].Role, req[i].Role)
		case rec[i].Content != req[i].Content:
			at := commonPrefix(rec[i].Content, req[i].Content)
			return fmt.Sprintf("message %d differs at byte %d: recorded %q, requested %q",
				i, at, snippet(rec[i].Content, at), snippet(req[i].Content, at))
		}
	}
	return ""
}

func snippet(s string, at int) string {
	end := min(len(s), at+40)
	return s[at:end]
}

// Interface guards
var (
	_ Client = (*Recorder)(nil)
	_ Client = (*Replayer)(nil)
)
