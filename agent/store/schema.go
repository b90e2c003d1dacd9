package store

import (
	"context"
	"database/sql"
	"fmt"
)

// migration is one forward step of the schema. Version n is the n-th entry of
// migrations; its statements run in one transaction with the version record,
// so a migration is applied entirely or not at all.
type migration struct {
	version    int
	statements []string
}

// migrations is the schema's history. Append to it; never edit a released
// entry (files in the field have already applied it).
var migrations = []migration{
	{version: 1, statements: []string{
		`CREATE TABLE runs (
			id             TEXT PRIMARY KEY,
			kernel_dir     TEXT NOT NULL,
			problem        TEXT NOT NULL DEFAULT '',
			strategy       TEXT NOT NULL DEFAULT '',
			platform       TEXT NOT NULL DEFAULT '',
			device         TEXT NOT NULL DEFAULT '',
			config_yaml    TEXT NOT NULL DEFAULT '',
			input_id       TEXT NOT NULL,
			started_at     TEXT NOT NULL,
			finished_at    TEXT,
			status         TEXT NOT NULL CHECK (status IN ('running', 'finished', 'failed', 'interrupted')),
			stop_reason    TEXT NOT NULL DEFAULT '',
			best_id        TEXT,
			eager_timing   TEXT,
			compile_timing TEXT,
			resumes        INTEGER NOT NULL DEFAULT 0
		)`,
		`CREATE INDEX runs_by_kernel_dir ON runs (kernel_dir, started_at)`,
		`CREATE INDEX runs_by_start ON runs (started_at)`,
		`CREATE TABLE rounds (
			run_id      TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			idx         INTEGER NOT NULL CHECK (idx >= 0),
			started_at  TEXT NOT NULL,
			finished_at TEXT,
			state       TEXT,
			PRIMARY KEY (run_id, idx)
		)`,
		`CREATE TABLE candidates (
			run_id         TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			id             TEXT NOT NULL,
			round          INTEGER NOT NULL,
			parent_id      TEXT,
			bottleneck     INTEGER NOT NULL DEFAULT 0,
			direction      TEXT NOT NULL DEFAULT '',
			refine_of      TEXT,
			refine_attempt INTEGER NOT NULL DEFAULT 0,
			source         TEXT NOT NULL,
			source_hash    TEXT NOT NULL,
			status         TEXT NOT NULL CHECK (status IN ('proposed', 'verified', 'rejected', 'timed', 'profiled', 'failed')),
			verdict        TEXT,
			failure        TEXT NOT NULL DEFAULT '',
			reason         TEXT NOT NULL DEFAULT '',
			timing         TEXT,
			median_ms      REAL,
			metrics        TEXT,
			roofline       TEXT,
			error          TEXT NOT NULL DEFAULT '',
			created_at     TEXT NOT NULL,
			updated_at     TEXT NOT NULL,
			PRIMARY KEY (run_id, id),
			FOREIGN KEY (run_id, round) REFERENCES rounds (run_id, idx),
			FOREIGN KEY (run_id, parent_id) REFERENCES candidates (run_id, id),
			FOREIGN KEY (run_id, refine_of) REFERENCES candidates (run_id, id)
		)`,
		`CREATE INDEX candidates_by_hash ON candidates (run_id, source_hash)`,
		`CREATE INDEX candidates_by_status ON candidates (run_id, status)`,
		`CREATE INDEX candidates_by_round ON candidates (run_id, round)`,
		`CREATE INDEX candidates_by_refine ON candidates (run_id, refine_of)`,
		`CREATE INDEX candidates_by_parent ON candidates (run_id, parent_id)`,
		`CREATE TABLE llm_calls (
			id                INTEGER PRIMARY KEY AUTOINCREMENT,
			run_id            TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			round             INTEGER,
			candidate_id      TEXT NOT NULL DEFAULT '',
			purpose           TEXT NOT NULL DEFAULT '',
			model             TEXT NOT NULL DEFAULT '',
			prompt_tokens     INTEGER NOT NULL DEFAULT 0,
			completion_tokens INTEGER NOT NULL DEFAULT 0,
			cost_usd          REAL NOT NULL DEFAULT 0,
			duration_ns       INTEGER NOT NULL DEFAULT 0,
			fingerprint       TEXT NOT NULL DEFAULT '',
			error             TEXT NOT NULL DEFAULT '',
			at                TEXT NOT NULL,
			FOREIGN KEY (run_id, round) REFERENCES rounds (run_id, idx)
		)`,
		`CREATE INDEX llm_calls_by_run ON llm_calls (run_id)`,
		`CREATE TABLE events (
			id           INTEGER PRIMARY KEY AUTOINCREMENT,
			run_id       TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
			round        INTEGER,
			candidate_id TEXT NOT NULL DEFAULT '',
			at           TEXT NOT NULL,
			kind         TEXT NOT NULL,
			message      TEXT NOT NULL DEFAULT '',
			data         TEXT
		)`,
		`CREATE INDEX events_by_run ON events (run_id, id)`,
	}},
	// The slot a candidate fills in its round (r<round>c<slot>) in a column
	// of its own, and the kernels shown with its parent (ids separated by spaces); rows
	// of version 1 get their slot from their id.
	{version: 2, statements: []string{
		`ALTER TABLE candidates ADD COLUMN slot INTEGER NOT NULL DEFAULT 0 CHECK (slot >= 0)`,
		`ALTER TABLE candidates ADD COLUMN inspirations TEXT NOT NULL DEFAULT ''`,
		`UPDATE candidates SET slot = CAST(substr(id, instr(id, 'c') + 1,
			CASE WHEN instr(id, 'f') > 0 THEN instr(id, 'f') - instr(id, 'c') - 1 ELSE length(id) - instr(id, 'c') END)
			AS INTEGER) WHERE id GLOB 'r[0-9]*c[0-9]*'`,
		`CREATE INDEX candidates_by_slot ON candidates (run_id, round, slot)`,
	}},
	// Whether a call's token counts were estimated by kagent (the server's
	// reply carried no usage); rows of earlier versions were reported.
	{version: 3, statements: []string{
		`ALTER TABLE llm_calls ADD COLUMN usage_estimated INTEGER NOT NULL DEFAULT 0 CHECK (usage_estimated IN (0, 1))`,
	}},
}

// SchemaVersion is the schema version this build writes.
func SchemaVersion() int { return len(migrations) }

const createVersionTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
	version    INTEGER PRIMARY KEY,
	applied_at TEXT NOT NULL
)`

// migrate brings the file at db up to the last of ms, in one write
// transaction so that two processes opening a new file do not both apply a
// step. A file newer than ms is ErrNewerSchema and is left untouched.
func migrate(ctx context.Context, db *sql.DB, ms []migration, now string) (err error) {
	for i, m := range ms {
		if m.version != i+1 {
			return fmt.Errorf("migrate: migration %d has version %d: %w", i+1, m.version, ErrInvalid)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()

	var hasVersions, others int
	err = tx.QueryRowContext(ctx, `SELECT
		count(*) FILTER (WHERE name = 'schema_migrations'),
		count(*) FILTER (WHERE name <> 'schema_migrations' AND name NOT LIKE 'sqlite_%')
		FROM sqlite_schema WHERE type = 'table'`).Scan(&hasVersions, &others)
	if err != nil {
		return fmt.Errorf("migrate: read schema: %w", err)
	}
	if hasVersions == 0 && others > 0 {
		return fmt.Errorf("migrate: %d tables but no schema_migrations: %w", others, ErrNotStore)
	}
	if _, err = tx.ExecContext(ctx, createVersionTable); err != nil {
		return fmt.Errorf("migrate: create version table: %w", err)
	}
	var current int
	if err = tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("migrate: read version: %w", err)
	}
	if current > len(ms) {
		return fmt.Errorf("migrate: file has schema version %d, this kagent knows up to %d (use a newer kagent): %w",
			current, len(ms), ErrNewerSchema)
	}
	for _, m := range ms[current:] {
		for j, stmt := range m.statements {
			if _, err = tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migrate: version %d statement %d: %w", m.version, j+1, err)
			}
		}
		if _, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)`, m.version, now); err != nil {
			return fmt.Errorf("migrate: record version %d: %w", m.version, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}
