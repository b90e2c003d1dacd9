package worker

// A call is one request line on the worker's stdin and one reply line on its
// private copy of stdout, matched by id (PROTOCOL.md). Calls are serialised;
// a reply line that is too long or does not parse is protocol corruption and
// ends the worker.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// reply is one line from the worker.
type reply struct {
	ID     int             `json:"id"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *ReplyError     `json:"error"`
}

// maxLine bounds one reply line; a longer one is protocol corruption.
const maxLine = 64 << 20

// readLines forwards reply lines until EOF or a line over maxLine.
func (w *Worker) readLines(r io.Reader) {
	br := bufio.NewReaderSize(r, 1<<16)
	defer close(w.lines)
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > maxLine {
			w.readErr = fmt.Errorf("%w: reply line over %d bytes", ErrProtocol, maxLine)
			_, _ = io.Copy(io.Discard, br)
			return
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			if len(bytes.TrimSpace(buf)) > 0 {
				w.readErr = fmt.Errorf("%w: unterminated reply at exit", ErrProtocol)
			}
			return
		}
		line := bytes.TrimSpace(buf)
		buf = nil
		if len(line) == 0 {
			continue
		}
		w.lines <- append([]byte(nil), line...)
	}
}

// Call sends one request and decodes the result into out. timeout bounds the
// call (0 = only ctx). A timeout kills the worker (*TimeoutError); a worker
// that dies gives *ExitError; an error reply gives *ReplyError (with Fatal
// set when the worker is poisoned and exits).
func (w *Worker) Call(ctx context.Context, op string, req any, out any, timeout time.Duration) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed || !w.Alive() {
		return w.exitError()
	}
	id := w.nextID
	w.nextID++
	msg, err := encodeRequest(id, op, req)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if _, err := w.stdin.Write(msg); err != nil {
		<-w.doneOrTimeout(2 * time.Second)
		return w.exitError()
	}
	cctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err = w.await(cctx, id, out)
	var te *TimeoutError
	if errors.As(err, &te) {
		te.Op, te.After = op, timeout
	}
	return err
}

// await waits for the reply with the given id.
func (w *Worker) await(ctx context.Context, id int, out any) error {
	for {
		select {
		case line, ok := <-w.lines:
			if done, err := w.handle(line, ok, id, out); done {
				return err
			}
		case <-ctx.Done():
			w.Kill()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return &TimeoutError{Stderr: w.tail.String()}
			}
			return ctx.Err()
		case <-w.done:
			// The process exited: read what it wrote before it went.
			grace := time.After(2 * time.Second)
			for {
				select {
				case line, ok := <-w.lines:
					if done, err := w.handle(line, ok, id, out); done {
						return err
					}
				case <-grace:
					return w.exitError()
				}
			}
		}
	}
}

// handle processes one reply line; done is false for a stale reply.
func (w *Worker) handle(line []byte, ok bool, id int, out any) (done bool, err error) {
	if !ok {
		<-w.doneOrTimeout(5 * time.Second)
		if w.readErr != nil {
			w.Kill()
			return true, &ExitError{Err: w.readErr, Stderr: w.tail.String(), Code: -1}
		}
		return true, w.exitError()
	}
	var r reply
	if err := json.Unmarshal(line, &r); err != nil {
		w.Kill()
		return true, &ExitError{Err: fmt.Errorf("%w: unparsable reply %.80q", ErrProtocol, line), Stderr: w.tail.String(), Code: -1}
	}
	if r.ID != id {
		w.log.Warn("dropping stale worker reply", "want", id, "got", r.ID)
		return false, nil
	}
	if !r.OK {
		if r.Error == nil {
			r.Error = &ReplyError{Kind: "protocol", Message: "error reply without error"}
		}
		if r.Error.Fatal {
			// The worker exits after a fatal reply; make sure it has before
			// the caller can hand it another request.
			<-w.doneOrTimeout(10 * time.Second)
			w.Kill()
		}
		return true, r.Error
	}
	if out != nil && len(r.Result) > 0 {
		if err := json.Unmarshal(r.Result, out); err != nil {
			return true, fmt.Errorf("%w: result: %v", ErrProtocol, err)
		}
	}
	return true, nil
}

// encodeRequest merges id and op into the request's JSON object.
func encodeRequest(id int, op string, req any) ([]byte, error) {
	m := map[string]any{}
	if req != nil {
		b, err := json.Marshal(req)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("request must be a JSON object: %w", err)
		}
	}
	m["id"], m["op"] = id, op
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
