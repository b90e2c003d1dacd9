package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// RecordLLMCall records one model call (failed calls too: Error says why) and
// returns its id. The run must exist; it may be in any status. Round is an
// existing round or NoRound; CandidateID is free text (the candidate may be
// added after its rewrite call returns).
func (s *Store) RecordLLMCall(ctx context.Context, c LLMCall) (int64, error) {
	if c.PromptTokens < 0 || c.CompletionTokens < 0 || c.CostUSD < 0 || c.Duration < 0 {
		return 0, fmt.Errorf("record llm call of run %s: negative usage: %w", c.RunID, ErrInvalid)
	}
	at := c.At
	if at.IsZero() {
		at = s.now()
	}
	var id int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := runStatus(ctx, tx, c.RunID); err != nil {
			return err
		}
		if c.Round >= 0 {
			var one int
			err := tx.QueryRowContext(ctx, `SELECT 1 FROM rounds WHERE run_id = ? AND idx = ?`, c.RunID, c.Round).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("round %d: %w", c.Round, ErrNotFound)
			}
			if err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO llm_calls
			(run_id, round, candidate_id, purpose, model, prompt_tokens, completion_tokens, usage_estimated, cost_usd,
			 duration_ns, fingerprint, error, at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			c.RunID, nullRound(c.Round), c.CandidateID, c.Purpose, c.Model, c.PromptTokens, c.CompletionTokens,
			c.UsageEstimated, c.CostUSD, int64(c.Duration), c.Fingerprint, c.Error, formatTime(at))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("record llm call of run %s: %w", c.RunID, err)
	}
	return id, nil
}

// LLMCalls returns a run's model calls in the order they were recorded.
func (s *Store) LLMCalls(ctx context.Context, runID string) ([]LLMCall, error) {
	var out []LLMCall
	err := s.read(ctx, func(tx *sql.Tx) error {
		if _, err := runStatus(ctx, tx, runID); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT id, round, candidate_id, purpose, model, prompt_tokens,
			completion_tokens, usage_estimated, cost_usd, duration_ns, fingerprint, error, at
			FROM llm_calls WHERE run_id = ? ORDER BY id`, runID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			c := LLMCall{RunID: runID}
			var round sql.NullInt64
			var dur int64
			var at sql.NullString
			if err := rows.Scan(&c.ID, &round, &c.CandidateID, &c.Purpose, &c.Model, &c.PromptTokens,
				&c.CompletionTokens, &c.UsageEstimated, &c.CostUSD, &dur, &c.Fingerprint, &c.Error, &at); err != nil {
				return err
			}
			c.Round, c.Duration = roundOf(round), time.Duration(dur)
			if c.At, err = parseTime(at); err != nil {
				return err
			}
			out = append(out, c)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("list llm calls of run %s: %w", runID, err)
	}
	return out, nil
}

// LLMUsage adds up a run's model calls, in total, per purpose and per
// model: what a
// resumed run has already spent against its budget.
func (s *Store) LLMUsage(ctx context.Context, runID string) (Usage, error) {
	var u Usage
	err := s.read(ctx, func(tx *sql.Tx) error {
		if _, err := runStatus(ctx, tx, runID); err != nil {
			return err
		}
		var err error
		u, err = llmUsage(ctx, tx, runID)
		return err
	})
	if err != nil {
		return Usage{}, fmt.Errorf("llm usage of run %s: %w", runID, err)
	}
	return u, nil
}

func llmUsage(ctx context.Context, tx *sql.Tx, runID string) (Usage, error) {
	byPurpose, err := llmTotals(ctx, tx, runID, "purpose")
	if err != nil {
		return Usage{}, err
	}
	byModel, err := llmTotals(ctx, tx, runID, "model")
	if err != nil {
		return Usage{}, err
	}
	u := Usage{ByPurpose: byPurpose, ByModel: byModel}
	for _, t := range byPurpose {
		u.Totals = u.Totals.Plus(t)
	}
	return u, nil
}

// llmTotals adds up a run's calls grouped by one column (purpose or model);
// nil when the run made none.
func llmTotals(ctx context.Context, tx *sql.Tx, runID, column string) (map[string]Totals, error) {
	if column != "purpose" && column != "model" {
		return nil, fmt.Errorf("group llm calls by %q: %w", column, ErrInvalid)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+column+`, count(*), count(*) FILTER (WHERE error <> ''),
		coalesce(sum(prompt_tokens), 0), coalesce(sum(completion_tokens), 0), count(*) FILTER (WHERE usage_estimated <> 0),
		coalesce(sum(cost_usd), 0), coalesce(sum(duration_ns), 0)
		FROM llm_calls WHERE run_id = ? GROUP BY `+column+` ORDER BY `+column, runID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out map[string]Totals
	for rows.Next() {
		var key string
		var t Totals
		var dur int64
		if err := rows.Scan(&key, &t.Calls, &t.Failed, &t.PromptTokens, &t.CompletionTokens, &t.EstimatedCalls, &t.CostUSD, &dur); err != nil {
			return nil, err
		}
		t.Duration = time.Duration(dur)
		if out == nil {
			out = map[string]Totals{}
		}
		out[key] = t
	}
	return out, rows.Err()
}
