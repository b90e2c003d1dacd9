package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/kagent-kernels/kagent/platform"
	"github.com/kagent-kernels/kagent/roofline"
)

// AddCandidate records a new candidate with status proposed in an open round
// of a running run and returns it as stored (SourceHash, timestamps set).
// From c it takes ID, Round, Slot, ParentID, Inspirations, Bottleneck,
// Direction, RefineOf, RefineAttempt and Source. The id must be new in the
// run (ErrDuplicate) and hold no white space; the parent, the inspirations
// and the refined candidate, when given, must already be recorded in the run
// (ErrNotFound) — which is why the input kernel is a round-0 candidate.
func (s *Store) AddCandidate(ctx context.Context, c Candidate) (Candidate, error) {
	switch {
	case c.RunID == "" || c.ID == "":
		return Candidate{}, fmt.Errorf("add candidate %q: empty run or candidate id: %w", c.ID, ErrInvalid)
	case strings.ContainsFunc(c.ID, unicode.IsSpace):
		return Candidate{}, fmt.Errorf("add candidate %q: white space in the id: %w", c.ID, ErrInvalid)
	case c.Round < 0 || c.Slot < 0 || c.Bottleneck < 0 || c.RefineAttempt < 0:
		return Candidate{}, fmt.Errorf("add candidate %s: negative round, slot, bottleneck or refine attempt: %w", c.ID, ErrInvalid)
	case c.ParentID == c.ID || c.RefineOf == c.ID:
		return Candidate{}, fmt.Errorf("add candidate %s: its own parent: %w", c.ID, ErrInvalid)
	}
	now := s.now().UTC()
	c.SourceHash = SourceHash(c.Source)
	c.Status = StatusProposed
	c.Verdict, c.Timing, c.Metrics, c.Roofline, c.Error = nil, nil, nil, nil, ""
	c.CreatedAt, c.UpdatedAt = now, now
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireRunning(ctx, tx, c.RunID); err != nil {
			return err
		}
		if err := requireOpenRound(ctx, tx, c.RunID, c.Round); err != nil {
			return err
		}
		for _, ref := range append([]string{c.ParentID, c.RefineOf}, c.Inspirations...) {
			if ref == "" {
				continue
			}
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM candidates WHERE run_id = ? AND id = ?`, c.RunID, ref).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("candidate %s: %w", ref, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO candidates
			(run_id, id, round, slot, parent_id, inspirations, bottleneck, direction, refine_of, refine_attempt, source,
			 source_hash, status, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.RunID, c.ID, c.Round, c.Slot, nullString(c.ParentID), joinIDs(c.Inspirations), c.Bottleneck, c.Direction,
			nullString(c.RefineOf), c.RefineAttempt, c.Source, c.SourceHash, c.Status, formatTime(now), formatTime(now))
		if isUniqueViolation(err) {
			return fmt.Errorf("id is taken: %w", ErrDuplicate)
		}
		if err != nil {
			return err
		}
		msg := "proposed"
		if c.ParentID != "" {
			msg += " from " + c.ParentID
		}
		if c.RefineOf != "" {
			msg += fmt.Sprintf(", refining %s (attempt %d)", c.RefineOf, c.RefineAttempt)
		}
		return s.addEvent(ctx, tx, Event{RunID: c.RunID, Round: c.Round, CandidateID: c.ID, At: now,
			Kind: "candidate.proposed", Message: msg})
	})
	if err != nil {
		return Candidate{}, fmt.Errorf("add candidate %s to run %s: %w", c.ID, c.RunID, err)
	}
	return c, nil
}

// transitions lists the statuses each status may move to.
var transitions = map[Status][]Status{
	StatusProposed: {StatusVerified, StatusRejected, StatusFailed},
	StatusVerified: {StatusTimed, StatusRejected, StatusFailed},
	StatusTimed:    {StatusProfiled, StatusRejected, StatusFailed},
	// Profiled to profiled replaces synthetic metrics with a profiler's,
	// when a candidate left on the synthetic roofline becomes the best.
	// Beyond these, profiled to timed replaces a screening timing with one
	// of another budget (successive halving times its survivors again,
	// longer; upgrades), never a full timing.
	StatusProfiled: {StatusProfiled, StatusRejected},
}

// upgrades reports whether timing next may replace cur: cur is a screening
// timing and next was taken with another budget.
func upgrades(cur, next *platform.Timing) bool {
	return cur != nil && next != nil && cur.Screening() && next.Budget != cur.Budget
}

func allowed(from, to Status) bool {
	for _, s := range transitions[from] {
		if s == to {
			return true
		}
	}
	return false
}

// check validates u's fields against its status (see Update).
func (u Update) check() error {
	// only reports that u carries exactly the named results; a roofline may
	// only come with metrics.
	only := func(verdict, timing, metrics, errText bool) bool {
		return (u.Verdict != nil) == verdict && (u.Timing != nil) == timing && (u.Metrics != nil) == metrics &&
			(u.Error != "") == errText && (u.Roofline == nil || metrics)
	}
	var ok bool
	switch u.Status {
	case StatusVerified:
		ok = only(true, false, false, false) && u.Verdict.Passed
	case StatusRejected:
		ok = only(true, false, false, false) && !u.Verdict.Passed
	case StatusTimed:
		ok = only(false, true, false, false)
	case StatusProfiled:
		ok = only(false, false, true, false)
	case StatusFailed:
		ok = only(false, false, false, true)
	default:
		return fmt.Errorf("status %q cannot be set by an update: %w", u.Status, ErrInvalid)
	}
	if !ok {
		return fmt.Errorf("%s takes %s and nothing else: %w", u.Status, updateTakes[u.Status], ErrInvalid)
	}
	return nil
}

var updateTakes = map[Status]string{
	StatusVerified: "a passing verdict",
	StatusRejected: "a failing verdict",
	StatusTimed:    "a timing",
	StatusProfiled: "metrics and an optional roofline",
	StatusFailed:   "an error",
}

// UpdateCandidate records the result of one step of a candidate in one
// transaction: its new status and that step's result (see Update for what
// each status takes and the transitions allowed). A change the candidate's
// current status does not allow is ErrTransition, so nothing is verified,
// timed or profiled twice.
func (s *Store) UpdateCandidate(ctx context.Context, runID, id string, u Update) (Candidate, error) {
	if err := u.check(); err != nil {
		return Candidate{}, fmt.Errorf("update candidate %s of run %s: %w", id, runID, err)
	}
	set := []string{"status = ?", "updated_at = ?"}
	now := s.now()
	args := []any{u.Status, formatTime(now)}
	msg := string(u.Status)
	switch {
	case u.Verdict != nil:
		js, err := encodeJSON(u.Verdict)
		if err != nil {
			return Candidate{}, fmt.Errorf("update candidate %s of run %s: %w", id, runID, err)
		}
		set = append(set, "verdict = ?", "failure = ?", "reason = ?")
		args = append(args, js, u.Verdict.Failure, u.Verdict.Reason)
		if !u.Verdict.Passed {
			msg += ": " + u.Verdict.Failure + ": " + u.Verdict.Reason
		}
	case u.Timing != nil:
		js, err := encodeJSON(u.Timing)
		if err != nil {
			return Candidate{}, fmt.Errorf("update candidate %s of run %s: %w", id, runID, err)
		}
		t, _ := decodeJSON[platform.Timing](js) // the median as stored (non-finite read as 0)
		set = append(set, "timing = ?", "median_ms = ?")
		args = append(args, js, t.MedianMS)
		msg += fmt.Sprintf(": %.4g ms (cv %.3g, n %d)", t.MedianMS, t.CV, t.N)
		if t.Screening() {
			msg += ", " + t.Budget + " (a screening timing)"
		}
	case u.Metrics != nil:
		js, err := encodeJSON(u.Metrics)
		if err != nil {
			return Candidate{}, fmt.Errorf("update candidate %s of run %s: %w", id, runID, err)
		}
		var rl sql.NullString
		if u.Roofline != nil {
			if rl, err = encodeJSON(u.Roofline); err != nil {
				return Candidate{}, fmt.Errorf("update candidate %s of run %s: %w", id, runID, err)
			}
			if u.Roofline.Placed() {
				msg += fmt.Sprintf(": %.3g%% SOL, %s", u.Roofline.SOL, u.Roofline.Class)
			} else if u.Roofline.Unplaced != "" {
				msg += ": roofline n/a (" + u.Roofline.Unplaced + ")"
			}
		}
		set = append(set, "metrics = ?", "roofline = ?")
		args = append(args, js, rl)
	case u.Error != "":
		set = append(set, "error = ?")
		args = append(args, u.Error)
		msg += ": " + u.Error
	}
	var out Candidate
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireRunning(ctx, tx, runID); err != nil {
			return err
		}
		cur, err := getCandidate(ctx, tx, runID, id)
		if err != nil {
			return err
		}
		retime := cur.Status == StatusProfiled && u.Status == StatusTimed && upgrades(cur.Timing, u.Timing)
		if !allowed(cur.Status, u.Status) && !retime {
			return fmt.Errorf("%s → %s: %w", cur.Status, u.Status, ErrTransition)
		}
		q := `UPDATE candidates SET ` + strings.Join(set, ", ") + ` WHERE run_id = ? AND id = ? AND status = ?`
		if _, err := tx.ExecContext(ctx, q, append(args, runID, id, cur.Status)...); err != nil {
			return err
		}
		if err := s.addEvent(ctx, tx, Event{RunID: runID, Round: cur.Round, CandidateID: id, At: now,
			Kind: "candidate." + string(u.Status), Message: msg}); err != nil {
			return err
		}
		out, err = getCandidate(ctx, tx, runID, id)
		return err
	})
	if err != nil {
		return Candidate{}, fmt.Errorf("update candidate %s of run %s: %w", id, runID, err)
	}
	return out, nil
}

// Candidate returns one candidate.
func (s *Store) Candidate(ctx context.Context, runID, id string) (Candidate, error) {
	var c Candidate
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = getCandidate(ctx, tx, runID, id)
		return err
	})
	if err != nil {
		return Candidate{}, fmt.Errorf("get candidate %s of run %s: %w", id, runID, err)
	}
	return c, nil
}

// Candidates returns a run's candidates that match f, by round and then in
// the order they were added.
func (s *Store) Candidates(ctx context.Context, runID string, f CandidateFilter) ([]Candidate, error) {
	var out []Candidate
	err := s.read(ctx, func(tx *sql.Tx) error {
		if _, err := runStatus(ctx, tx, runID); err != nil {
			return err
		}
		var err error
		out, err = listCandidates(ctx, tx, runID, f)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list candidates of run %s: %w", runID, err)
	}
	return out, nil
}

// CandidateByHash returns the first candidate of a run whose normalised source
// hashes to hash (see SourceHash), or ErrNotFound: how the loop finds out
// that a proposal repeats one it already has.
func (s *Store) CandidateByHash(ctx context.Context, runID, hash string) (Candidate, error) {
	var c Candidate
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = scanCandidate(tx.QueryRowContext(ctx, `SELECT `+candidateColumns+` FROM candidates
			WHERE run_id = ? AND source_hash = ? ORDER BY rowid LIMIT 1`, runID, hash))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("source hash %.12s: %w", hash, ErrNotFound)
		}
		return err
	})
	if err != nil {
		return Candidate{}, fmt.Errorf("find candidate of run %s: %w", runID, err)
	}
	return c, nil
}

// BestCandidate returns the run's best: the candidate recorded with SetBest,
// or, when none was, the measured (timed or profiled) candidate with the
// lowest median time. ErrNotFound when no candidate is measured.
func (s *Store) BestCandidate(ctx context.Context, runID string) (Candidate, error) {
	var c Candidate
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		c, err = bestCandidate(ctx, tx, runID)
		return err
	})
	if err != nil {
		return Candidate{}, fmt.Errorf("best candidate of run %s: %w", runID, err)
	}
	return c, nil
}

func bestCandidate(ctx context.Context, tx *sql.Tx, runID string) (Candidate, error) {
	var best sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT best_id FROM runs WHERE id = ?`, runID).Scan(&best)
	if errors.Is(err, sql.ErrNoRows) {
		return Candidate{}, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	if err != nil {
		return Candidate{}, err
	}
	if best.Valid {
		return getCandidate(ctx, tx, runID, best.String)
	}
	c, err := scanCandidate(tx.QueryRowContext(ctx, `SELECT `+candidateColumns+` FROM candidates
		WHERE run_id = ? AND status IN ('timed', 'profiled') AND median_ms > 0
		ORDER BY median_ms, rowid LIMIT 1`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return Candidate{}, fmt.Errorf("no measured candidate: %w", ErrNotFound)
	}
	return c, err
}

const candidateColumns = `run_id, id, round, slot, parent_id, inspirations, bottleneck, direction, refine_of,
	refine_attempt, source, source_hash, status, verdict, timing, metrics, roofline, error, created_at, updated_at`

func scanCandidate(sc scanner) (Candidate, error) {
	var c Candidate
	var parent, refineOf, verdict, timing, metrics, roof, created, updated sql.NullString
	var inspirations string
	err := sc.Scan(&c.RunID, &c.ID, &c.Round, &c.Slot, &parent, &inspirations, &c.Bottleneck, &c.Direction, &refineOf,
		&c.RefineAttempt, &c.Source, &c.SourceHash, &c.Status, &verdict, &timing, &metrics, &roof, &c.Error, &created,
		&updated)
	if err != nil {
		return Candidate{}, err
	}
	c.ParentID, c.RefineOf, c.Inspirations = parent.String, refineOf.String, splitIDs(inspirations)
	if c.Verdict, err = decodeJSON[platform.Verdict](verdict); err != nil {
		return Candidate{}, err
	}
	if c.Timing, err = decodeJSON[platform.Timing](timing); err != nil {
		return Candidate{}, err
	}
	if c.Metrics, err = decodeJSON[roofline.Metrics](metrics); err != nil {
		return Candidate{}, err
	}
	if c.Roofline, err = decodeJSON[roofline.Result](roof); err != nil {
		return Candidate{}, err
	}
	if c.CreatedAt, err = parseTime(created); err != nil {
		return Candidate{}, err
	}
	if c.UpdatedAt, err = parseTime(updated); err != nil {
		return Candidate{}, err
	}
	return c, nil
}

func getCandidate(ctx context.Context, tx *sql.Tx, runID, id string) (Candidate, error) {
	c, err := scanCandidate(tx.QueryRowContext(ctx, `SELECT `+candidateColumns+` FROM candidates
		WHERE run_id = ? AND id = ?`, runID, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Candidate{}, fmt.Errorf("candidate %s: %w", id, ErrNotFound)
	}
	return c, err
}

func listCandidates(ctx context.Context, tx *sql.Tx, runID string, f CandidateFilter) ([]Candidate, error) {
	q := `SELECT ` + candidateColumns + ` FROM candidates WHERE run_id = ?`
	args := []any{runID}
	if len(f.Statuses) > 0 {
		q += ` AND status IN (?` + strings.Repeat(", ?", len(f.Statuses)-1) + `)`
		for _, st := range f.Statuses {
			args = append(args, st)
		}
	}
	if len(f.Rounds) > 0 {
		q += ` AND round IN (?` + strings.Repeat(", ?", len(f.Rounds)-1) + `)`
		for _, r := range f.Rounds {
			args = append(args, r)
		}
	}
	q += ` ORDER BY round, rowid`
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Candidate
	for rows.Next() {
		c, err := scanCandidate(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// joinIDs and splitIDs keep a list of candidate ids in one column (ids hold
// no spaces: CandidateID, InputID).
func joinIDs(ids []string) string { return strings.Join(ids, " ") }

func splitIDs(s string) []string { return strings.Fields(s) }
