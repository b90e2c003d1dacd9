package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
)

// AddEvent appends an event of the loop's own to a run's live log (the store
// logs its own changes itself). Round is a round index or NoRound; At
// defaults to now; Data, when set, must be JSON. It returns the event's id.
func (s *Store) AddEvent(ctx context.Context, e Event) (int64, error) {
	if e.Kind == "" {
		return 0, fmt.Errorf("add event to run %s: empty kind: %w", e.RunID, ErrInvalid)
	}
	if len(e.Data) > 0 && !json.Valid(e.Data) {
		return 0, fmt.Errorf("add event %s to run %s: data is not JSON: %w", e.Kind, e.RunID, ErrInvalid)
	}
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := runStatus(ctx, tx, e.RunID); err != nil {
			return err
		}
		if err := s.addEvent(ctx, tx, e); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT last_insert_rowid()`).Scan(&id)
	})
	if err != nil {
		return 0, fmt.Errorf("add event %s to run %s: %w", e.Kind, e.RunID, err)
	}
	return id, nil
}

// Events returns up to limit events of a run with ids above after, oldest
// first (limit <= 0: all). A follower polls with the last id it has seen.
func (s *Store) Events(ctx context.Context, runID string, after int64, limit int) ([]Event, error) {
	q := `SELECT id, round, candidate_id, at, kind, message, data FROM events WHERE run_id = ? AND id > ? ORDER BY id`
	args := []any{runID, after}
	if limit > 0 {
		q += ` LIMIT ?`
		args = append(args, limit)
	}
	var out []Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		if _, err := runStatus(ctx, tx, runID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			e := Event{RunID: runID}
			var round sql.NullInt64
			var at, data sql.NullString
			if err := rows.Scan(&e.ID, &round, &e.CandidateID, &at, &e.Kind, &e.Message, &data); err != nil {
				return err
			}
			e.Round = roundOf(round)
			if e.At, err = parseTime(at); err != nil {
				return err
			}
			if data.Valid {
				e.Data = json.RawMessage(data.String)
			}
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list events of run %s: %w", runID, err)
	}
	return out, nil
}
