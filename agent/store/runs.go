package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/kagent-kernels/kagent/platform"
)

// DefaultInputID is the candidate id of the input kernel when CreateRun is
// given none.
const DefaultInputID = "input"

// CreateRun records a new run with status running and returns it as stored.
// From r it takes ID (generated when empty: "20060102-150405-1a2b3c"),
// KernelDir (cleaned), Problem, Strategy, Platform, Device, ConfigYAML,
// InputID (DefaultInputID when empty) and StartedAt (now when zero).
func (s *Store) CreateRun(ctx context.Context, r Run) (Run, error) {
	if r.KernelDir == "" {
		return Run{}, fmt.Errorf("create run: empty kernel dir: %w", ErrInvalid)
	}
	if r.StartedAt.IsZero() {
		r.StartedAt = s.now()
	}
	r.StartedAt = r.StartedAt.UTC()
	if r.ID == "" {
		id, err := newRunID(r.StartedAt.Format("20060102-150405"))
		if err != nil {
			return Run{}, fmt.Errorf("create run: %w", err)
		}
		r.ID = id
	}
	if r.InputID == "" {
		r.InputID = DefaultInputID
	}
	r.KernelDir = filepath.Clean(r.KernelDir)
	r.Status = RunRunning
	r.FinishedAt, r.StopReason, r.BestID, r.Baselines, r.Resumes = time.Time{}, "", "", Baselines{}, 0
	err := s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO runs
			(id, kernel_dir, problem, strategy, platform, device, config_yaml, input_id, started_at, status)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			r.ID, r.KernelDir, r.Problem, r.Strategy, r.Platform, r.Device, r.ConfigYAML, r.InputID,
			formatTime(r.StartedAt), r.Status)
		if isUniqueViolation(err) {
			return fmt.Errorf("run %s: %w", r.ID, ErrDuplicate)
		}
		if err != nil {
			return err
		}
		return s.addEvent(ctx, tx, Event{RunID: r.ID, Round: NoRound, Kind: "run.created",
			Message: fmt.Sprintf("run %s: %s, strategy %s, platform %s", r.ID, r.KernelDir, r.Strategy, r.Platform)})
	})
	if err != nil {
		return Run{}, fmt.Errorf("create run: %w", err)
	}
	return r, nil
}

func newRunID(prefix string) (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return prefix + "-" + hex.EncodeToString(b[:]), nil
}

// FinishRun ends a running run with status finished, failed or interrupted
// and the reason it stopped (the stop rule, the error, the signal).
func (s *Store) FinishRun(ctx context.Context, runID string, status RunStatus, reason string) error {
	if status == RunRunning || !status.valid() {
		return fmt.Errorf("finish run %s: status %q: %w", runID, status, ErrInvalid)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireRunning(ctx, tx, runID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = ?, stop_reason = ?, finished_at = ? WHERE id = ?`,
			status, reason, s.stamp(), runID); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, Event{RunID: runID, Round: NoRound, Kind: "run." + string(status), Message: reason})
	})
	if err != nil {
		return fmt.Errorf("finish run %s: %w", runID, err)
	}
	return nil
}

// ReopenRun sets a run that is running (killed), interrupted or failed back
// to running so that a resumed loop may write to it, and counts the resume.
// A finished run cannot be reopened.
func (s *Store) ReopenRun(ctx context.Context, runID string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		st, err := runStatus(ctx, tx, runID)
		if err != nil {
			return err
		}
		if st == RunFinished {
			return fmt.Errorf("run is finished: %w", ErrTransition)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET status = 'running', finished_at = NULL, stop_reason = '',
			resumes = resumes + 1 WHERE id = ?`, runID); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, Event{RunID: runID, Round: NoRound, Kind: "run.reopened", Message: "was " + string(st)})
	})
	if err != nil {
		return fmt.Errorf("reopen run %s: %w", runID, err)
	}
	return nil
}

// SetBaseline records the timing of a PyTorch baseline (eager or compile) of
// a running run. A baseline is written once: a second call for the same kind
// is ErrTransition, so a resumed run never times it again. The input kernel's
// time is the timing of its candidate (Run.InputID), not a baseline call.
func (s *Store) SetBaseline(ctx context.Context, runID string, kind platform.TargetKind, t platform.Timing) error {
	var col string
	switch kind {
	case platform.TargetEager:
		col = "eager_timing"
	case platform.TargetCompile:
		col = "compile_timing"
	default:
		return fmt.Errorf("set baseline %s of run %s: want eager or compile: %w", kind, runID, ErrInvalid)
	}
	js, err := encodeJSON(&t)
	if err != nil {
		return fmt.Errorf("set baseline %s of run %s: %w", kind, runID, err)
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		if err := requireRunning(ctx, tx, runID); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE runs SET `+col+` = ? WHERE id = ? AND `+col+` IS NULL`, js, runID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("already timed: %w", ErrTransition)
		}
		return s.addEvent(ctx, tx, Event{RunID: runID, Round: NoRound, Kind: "baseline." + string(kind),
			Message: fmt.Sprintf("%s %.4g ms", kind, t.MedianMS)})
	})
	if err != nil {
		return fmt.Errorf("set baseline %s of run %s: %w", kind, runID, err)
	}
	return nil
}

// SetBest records the candidate the loop promoted as the run's best. It must
// be measured (timed or profiled).
func (s *Store) SetBest(ctx context.Context, runID, candidateID string) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireRunning(ctx, tx, runID); err != nil {
			return err
		}
		var st Status
		var median sql.NullFloat64
		err := tx.QueryRowContext(ctx, `SELECT status, median_ms FROM candidates WHERE run_id = ? AND id = ?`,
			runID, candidateID).Scan(&st, &median)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("candidate %s: %w", candidateID, ErrNotFound)
		}
		if err != nil {
			return err
		}
		if !st.Measured() {
			return fmt.Errorf("candidate %s is %s, not measured: %w", candidateID, st, ErrTransition)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE runs SET best_id = ? WHERE id = ?`, candidateID, runID); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, Event{RunID: runID, Round: NoRound, CandidateID: candidateID, Kind: "run.best",
			Message: fmt.Sprintf("best %s %.4g ms", candidateID, median.Float64)})
	})
	if err != nil {
		return fmt.Errorf("set best of run %s: %w", runID, err)
	}
	return nil
}

// StartRound opens round index of a running run. Rounds are numbered from 0
// without gaps, and one is open at a time: index must be one past the last
// round, and that round must be finished.
func (s *Store) StartRound(ctx context.Context, runID string, index int) error {
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireRunning(ctx, tx, runID); err != nil {
			return err
		}
		var last sql.NullInt64
		var open int
		if err := tx.QueryRowContext(ctx, `SELECT max(idx), count(*) FILTER (WHERE finished_at IS NULL)
			FROM rounds WHERE run_id = ?`, runID).Scan(&last, &open); err != nil {
			return err
		}
		next := 0
		if last.Valid {
			next = int(last.Int64) + 1
		}
		switch {
		case index >= 0 && index < next:
			return fmt.Errorf("round %d: %w", index, ErrDuplicate)
		case open > 0:
			return fmt.Errorf("round %d is still open: %w", next-1, ErrTransition)
		case index != next:
			return fmt.Errorf("next round is %d, not %d: %w", next, index, ErrInvalid)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO rounds (run_id, idx, started_at) VALUES (?, ?, ?)`,
			runID, index, s.stamp()); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, Event{RunID: runID, Round: index, Kind: "round.started",
			Message: fmt.Sprintf("round %d", index)})
	})
	if err != nil {
		return fmt.Errorf("start round %d of run %s: %w", index, runID, err)
	}
	return nil
}

// FinishRound closes round index. Every candidate of the round must be
// settled first (rejected, failed, timed or profiled: none proposed or
// verified), which is what lets a resumed run skip finished rounds whole.
// state is the strategy's state after the round (JSON; nil for none).
func (s *Store) FinishRound(ctx context.Context, runID string, index int, state json.RawMessage) error {
	if len(state) > 0 && !json.Valid(state) {
		return fmt.Errorf("finish round %d of run %s: state is not JSON: %w", index, runID, ErrInvalid)
	}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if err := requireRunning(ctx, tx, runID); err != nil {
			return err
		}
		if err := requireOpenRound(ctx, tx, runID, index); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, status FROM candidates
			WHERE run_id = ? AND round = ? AND status IN ('proposed', 'verified') ORDER BY rowid`, runID, index)
		if err != nil {
			return err
		}
		var unsettled []string
		for rows.Next() {
			var id, st string
			if err := rows.Scan(&id, &st); err != nil {
				rows.Close()
				return err
			}
			unsettled = append(unsettled, id+" ("+st+")")
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(unsettled) > 0 {
			return fmt.Errorf("unsettled candidates %s: %w", strings.Join(unsettled, ", "), ErrTransition)
		}
		var st sql.NullString
		if len(state) > 0 {
			st = sql.NullString{String: string(state), Valid: true}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE rounds SET finished_at = ?, state = ? WHERE run_id = ? AND idx = ?`,
			s.stamp(), st, runID, index); err != nil {
			return err
		}
		return s.addEvent(ctx, tx, Event{RunID: runID, Round: index, Kind: "round.finished",
			Message: fmt.Sprintf("round %d", index)})
	})
	if err != nil {
		return fmt.Errorf("finish round %d of run %s: %w", index, runID, err)
	}
	return nil
}

func runStatus(ctx context.Context, tx *sql.Tx, runID string) (RunStatus, error) {
	var st RunStatus
	err := tx.QueryRowContext(ctx, `SELECT status FROM runs WHERE id = ?`, runID).Scan(&st)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return st, err
}

func requireRunning(ctx context.Context, tx *sql.Tx, runID string) error {
	st, err := runStatus(ctx, tx, runID)
	if err != nil {
		return err
	}
	if st != RunRunning {
		return fmt.Errorf("run is %s (reopen it first): %w", st, ErrTransition)
	}
	return nil
}

func requireOpenRound(ctx context.Context, tx *sql.Tx, runID string, index int) error {
	var finished sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT finished_at FROM rounds WHERE run_id = ? AND idx = ?`, runID, index).Scan(&finished)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("round %d: %w", index, ErrNotFound)
	}
	if err != nil {
		return err
	}
	if finished.Valid {
		return fmt.Errorf("round %d is finished: %w", index, ErrTransition)
	}
	return nil
}

// ListRuns returns runs newest first.
func (s *Store) ListRuns(ctx context.Context, f RunFilter) ([]Run, error) {
	q := `SELECT ` + runColumns + ` FROM runs r WHERE 1 = 1`
	var args []any
	if f.KernelDir != "" {
		q += ` AND r.kernel_dir = ?`
		args = append(args, filepath.Clean(f.KernelDir))
	}
	if f.Status != "" {
		q += ` AND r.status = ?`
		args = append(args, f.Status)
	}
	q += ` ORDER BY r.started_at DESC, r.rowid DESC`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	var runs []Run
	err := s.read(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanRun(rows)
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return runs, nil
}

// GetRun returns a run with its rounds and candidates (in the order they were
// added), read from one snapshot.
func (s *Store) GetRun(ctx context.Context, runID string) (*RunDetail, error) {
	var d RunDetail
	err := s.read(ctx, func(tx *sql.Tx) error {
		var err error
		if d.Run, err = getRun(ctx, tx, runID); err != nil {
			return err
		}
		if d.Rounds, err = listRounds(ctx, tx, runID); err != nil {
			return err
		}
		d.Candidates, err = listCandidates(ctx, tx, runID, CandidateFilter{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("get run %s: %w", runID, err)
	}
	return &d, nil
}

// runColumns reads a run and its input candidate's timing.
const runColumns = `r.id, r.kernel_dir, r.problem, r.strategy, r.platform, r.device, r.config_yaml, r.input_id,
	r.started_at, r.finished_at, r.status, r.stop_reason, r.best_id, r.eager_timing, r.compile_timing, r.resumes,
	(SELECT c.timing FROM candidates c WHERE c.run_id = r.id AND c.id = r.input_id)`

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner) (Run, error) {
	var r Run
	var started, finished, best, eager, compile, input sql.NullString
	err := sc.Scan(&r.ID, &r.KernelDir, &r.Problem, &r.Strategy, &r.Platform, &r.Device, &r.ConfigYAML, &r.InputID,
		&started, &finished, &r.Status, &r.StopReason, &best, &eager, &compile, &r.Resumes, &input)
	if err != nil {
		return Run{}, err
	}
	if r.StartedAt, err = parseTime(started); err != nil {
		return Run{}, err
	}
	if r.FinishedAt, err = parseTime(finished); err != nil {
		return Run{}, err
	}
	r.BestID = best.String
	if r.Baselines.Eager, err = decodeJSON[platform.Timing](eager); err != nil {
		return Run{}, err
	}
	if r.Baselines.Compile, err = decodeJSON[platform.Timing](compile); err != nil {
		return Run{}, err
	}
	if r.Baselines.Input, err = decodeJSON[platform.Timing](input); err != nil {
		return Run{}, err
	}
	return r, nil
}

func getRun(ctx context.Context, tx *sql.Tx, runID string) (Run, error) {
	r, err := scanRun(tx.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs r WHERE r.id = ?`, runID))
	if errors.Is(err, sql.ErrNoRows) {
		return Run{}, fmt.Errorf("run %s: %w", runID, ErrNotFound)
	}
	return r, err
}

func listRounds(ctx context.Context, tx *sql.Tx, runID string) ([]Round, error) {
	rows, err := tx.QueryContext(ctx, `SELECT idx, started_at, finished_at, state FROM rounds
		WHERE run_id = ? ORDER BY idx`, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Round
	for rows.Next() {
		rd := Round{RunID: runID}
		var started, finished, state sql.NullString
		if err := rows.Scan(&rd.Index, &started, &finished, &state); err != nil {
			return nil, err
		}
		if rd.StartedAt, err = parseTime(started); err != nil {
			return nil, err
		}
		if rd.FinishedAt, err = parseTime(finished); err != nil {
			return nil, err
		}
		if state.Valid {
			rd.State = json.RawMessage(state.String)
		}
		out = append(out, rd)
	}
	return out, rows.Err()
}

// InterruptReason is the stop reason of a run whose context was cancelled
// (its status says "interrupted"): the cancellation's cause on one line, or
// "stopped by a signal or the caller" for a plain cancellation.
func InterruptReason(ctx context.Context) string {
	cause := context.Cause(ctx)
	if cause == nil || cause.Error() == context.Canceled.Error() {
		return "stopped by a signal or the caller"
	}
	return strings.Join(strings.Fields(cause.Error()), " ")
}
