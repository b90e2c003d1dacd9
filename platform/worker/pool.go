package worker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
)

// Pool keeps one worker per slot (one slot per GPU) and, for each slot, a warm
// spare started in the background, so a worker that dies is replaced without
// waiting for torch to import again.
type Pool struct {
	log   *slog.Logger
	idle  chan *slot
	slots []*slot
	spare bool

	// Spares start under spareCtx; Close cancels it and waits for every
	// start in flight, so none outlives the pool (with its process and its
	// temporary folder).
	spareCtx    context.Context
	spareCancel context.CancelFunc
	spares      sync.WaitGroup

	closeOnce sync.Once
}

type slot struct {
	index int
	opts  Options
	w     *Worker
	// spare is filled by a background start; nil while none is ready.
	spareMu  sync.Mutex
	spareW   *Worker
	spareErr error
	starting bool
	restarts int
	served   int // leases handed out
}

// NewPool starts one worker per option set (one per GPU), in parallel, and
// waits until all are ready. With spare set, each slot also keeps a warm
// replacement.
func NewPool(ctx context.Context, opts []Options, spare bool, log *slog.Logger) (*Pool, error) {
	if len(opts) == 0 {
		return nil, fmt.Errorf("start worker pool: no worker options")
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{log: log, idle: make(chan *slot, len(opts)), spare: spare}
	p.spareCtx, p.spareCancel = context.WithCancel(context.Background())
	errs := make(chan error, len(opts))
	for i, o := range opts {
		s := &slot{index: i, opts: o}
		p.slots = append(p.slots, s)
		go func() {
			w, err := Start(ctx, o)
			s.w = w
			errs <- err
		}()
	}
	var first error
	for range opts {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	if first != nil {
		p.Close()
		return nil, first
	}
	for _, s := range p.slots {
		p.idle <- s
		if spare {
			p.startSpare(s)
		}
	}
	return p, nil
}

// TakeSpare hands over the warm spare of the slot l holds, as a pool of its
// own, when one is ready and alive: a worker that has served no request,
// whose start-up was paid in the background. The slot starts another spare.
// It returns nil when none is ready.
func (p *Pool) TakeSpare(l *Lease) *Pool {
	w := l.slot.liveSpare()
	if w == nil {
		return nil
	}
	if p.spare {
		p.startSpare(l.slot)
	}
	q := &Pool{log: p.log, idle: make(chan *slot, 1)}
	q.spareCtx, q.spareCancel = context.WithCancel(context.Background())
	s := &slot{index: l.slot.index, opts: l.slot.opts, w: w}
	q.slots = append(q.slots, s)
	q.idle <- s
	return q
}

// Size is the number of slots.
func (p *Pool) Size() int { return len(p.slots) }

// Hello returns the handshake of the first slot's worker.
func (p *Pool) Hello() Hello { return p.slots[0].w.Hello() }

// startSpare starts a replacement worker for s in the background.
func (p *Pool) startSpare(s *slot) {
	s.spareMu.Lock()
	if s.starting || s.spareW != nil || p.spareCtx.Err() != nil {
		s.spareMu.Unlock()
		return
	}
	s.starting = true
	p.spares.Add(1)
	s.spareMu.Unlock()
	go func() {
		defer p.spares.Done()
		w, err := Start(p.spareCtx, s.opts)
		s.spareMu.Lock()
		s.spareW, s.spareErr, s.starting = w, err, false
		s.spareMu.Unlock()
		if err != nil && p.spareCtx.Err() == nil {
			p.log.Warn("warm spare failed to start", "slot", s.index, "err", err)
		}
	}()
}

// takeSpare returns the slot's spare if it is ready.
func (s *slot) takeSpare() *Worker {
	s.spareMu.Lock()
	defer s.spareMu.Unlock()
	w := s.spareW
	s.spareW = nil
	return w
}

// liveSpare takes the slot's spare if it is ready and alive (a dead one is
// closed); nil otherwise.
func (s *slot) liveSpare() *Worker {
	w := s.takeSpare()
	if w != nil && !w.Alive() {
		_ = w.Close()
		w = nil
	}
	return w
}

// Acquire waits for an idle slot and returns its live worker, replacing a dead
// one first (by the warm spare when ready). Release must follow.
func (p *Pool) Acquire(ctx context.Context) (*Lease, error) {
	var s *slot
	select {
	case s = <-p.idle:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if s.w == nil || !s.w.Alive() {
		if err := p.replace(ctx, s); err != nil {
			p.idle <- s
			return nil, err
		}
	}
	s.served++
	return &Lease{pool: p, slot: s, Worker: s.w}, nil
}

// replace swaps a slot's dead worker for its spare or a fresh start.
func (p *Pool) replace(ctx context.Context, s *slot) error {
	if s.w != nil {
		_ = s.w.Close()
	}
	s.restarts++
	w := s.liveSpare()
	if w == nil {
		var err error
		if w, err = Start(ctx, s.opts); err != nil {
			return fmt.Errorf("restart worker %d: %w", s.index, err)
		}
	}
	p.log.Info("worker replaced", "slot", s.index, "pid", w.PID(), "restarts", s.restarts)
	s.w = w
	if p.spare {
		p.startSpare(s)
	}
	return nil
}

// Served counts the leases slot i has handed out (requests it served).
// Read it when no lease is out.
func (p *Pool) Served(i int) int { return p.slots[i].served }

// Restarts counts how often slot i's worker was replaced.
func (p *Pool) Restarts(i int) int { return p.slots[i].restarts }

// Close stops every worker and spare.
func (p *Pool) Close() error {
	p.closeOnce.Do(func() {
		// Spares still starting stop (their starts are cancelled) and are
		// closed before Close returns: kagent may exit right after.
		for _, s := range p.slots {
			s.spareMu.Lock()
		}
		p.spareCancel()
		for _, s := range p.slots {
			s.spareMu.Unlock()
		}
		var wg sync.WaitGroup
		for _, s := range p.slots {
			for _, w := range []*Worker{s.w, s.takeSpare()} {
				if w == nil {
					continue
				}
				wg.Add(1)
				go func() { defer wg.Done(); _ = w.Close() }()
			}
		}
		wg.Wait()
		p.spares.Wait()
		for _, s := range p.slots {
			if w := s.takeSpare(); w != nil {
				_ = w.Close()
			}
		}
	})
	return nil
}

// Lease is a worker held by one caller.
type Lease struct {
	*Worker
	pool *Pool
	slot *slot
	done bool
}

// Slot is the index of the leased slot (its GPU).
func (l *Lease) Slot() int { return l.slot.index }

// Recycle replaces the leased worker by a fresh one (the slot's warm spare
// when ready): what the old process held, on the device and in memory, goes
// with it. The lease then holds the new worker.
func (l *Lease) Recycle(ctx context.Context) error {
	l.slot.w.Kill()
	if err := l.pool.replace(ctx, l.slot); err != nil {
		return err
	}
	l.Worker = l.slot.w
	return nil
}

// Release gives the slot back to the pool.
func (l *Lease) Release() {
	if l.done {
		return
	}
	l.done = true
	l.pool.idle <- l.slot
}
