package proctest

import (
	"sync"
	"time"
)

// Clock is a fake clock for the After fields of proc.Command and the
// profilers' runners: its timers fire only when the test advances it, so a
// timeout passes at the moment the test chooses (after the program under
// test signalled that it is ready), however loaded the machine is. Safe
// for concurrent use.
type Clock struct {
	mu     sync.Mutex
	now    time.Duration // since the clock was made
	timers []timer
}

type timer struct {
	at time.Duration
	ch chan time.Time
}

// NewClock returns a fake clock at its start.
func NewClock() *Clock { return &Clock{} }

// After returns a channel that receives once the clock has been advanced
// by d from now (time.After's contract).
func (c *Clock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.time()
		return ch
	}
	c.timers = append(c.timers, timer{at: c.now + d, ch: ch})
	return ch
}

// Advance moves the clock on by d and fires every timer due by then.
// Timers nobody waits for any more (their run ended) fire into the void.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now += d
	kept := c.timers[:0]
	for _, tm := range c.timers {
		if tm.at <= c.now {
			tm.ch <- c.time()
			continue
		}
		kept = append(kept, tm)
	}
	c.timers = kept
}

// Pending is the number of timers that have not fired.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// time is the clock's reading as a time.Time; c.mu is held.
func (c *Clock) time() time.Time { return time.Unix(0, 0).Add(c.now) }
