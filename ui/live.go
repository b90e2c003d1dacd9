package ui

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/kagent-kernels/kagent/agent/store"
)

// maxEventsPerPoll bounds the events one poll of the live stream sends.
const maxEventsPerPoll = 500

// events streams a run's store events with ids above ?after= (or the
// Last-Event-ID of a reconnecting client) as server-sent events, one JSON
// store.Event per message, polling the history every Options.Poll. It
// returns when the client leaves or the server shuts down (the request's
// context ends either way).
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	_, st, d := s.openRun(w, r)
	if d == nil {
		return
	}
	after, err := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		after, err = strconv.ParseInt(v, 10, 64)
	}
	if err != nil && (r.URL.Query().Has("after") || r.Header.Get("Last-Event-ID") != "") {
		s.fail(w, r, http.StatusBadRequest, "after: want an event id")
		return
	}
	s.streams.Add(1)
	defer s.streams.Add(-1)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodHead {
		return
	}
	// retry: how long the browser waits before reconnecting.
	if _, err := fmt.Fprintf(w, "retry: 2000\n\n"); err != nil {
		return
	}
	_ = rc.Flush()
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		evs, err := st.Events(ctx, d.ID, after, maxEventsPerPoll)
		if err != nil {
			if ctx.Err() == nil {
				s.log.Warn("tail events", "run", d.ID, "err", err)
			}
			return
		}
		for _, e := range evs {
			if err := writeEvent(w, e); err != nil {
				return
			}
			after = e.ID
		}
		if len(evs) == 0 {
			// A comment keeps proxies from closing an idle stream and
			// finds a client that left.
			if _, err := fmt.Fprint(w, ": idle\n\n"); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
		if len(evs) == maxEventsPerPoll {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// writeEvent writes one event as an SSE message. JSON has no raw newline,
// so the data is one line.
func writeEvent(w http.ResponseWriter, e store.Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "id: %d\ndata: %s\n\n", e.ID, b)
	return err
}
