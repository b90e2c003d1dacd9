package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// versions reads schema_migrations.
func versions(t *testing.T, db *sql.DB) []int {
	t.Helper()
	rows, err := db.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	check(t, err)
	defer rows.Close()
	var out []int
	for rows.Next() {
		var v int
		check(t, rows.Scan(&v))
		out = append(out, v)
	}
	check(t, rows.Err())
	return out
}

func tables(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	check(t, err)
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		check(t, rows.Scan(&n))
		out = append(out, n)
	}
	return out
}

func TestOpenMigratesEmptyFileAndReopens(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	check(t, os.WriteFile(path, nil, 0o644)) // an empty file is an empty database
	s, err := Open(ctx, path)
	check(t, err)
	want := []string{"candidates", "events", "llm_calls", "rounds", "runs", "schema_migrations"}
	if got := tables(t, s.w); !reflect.DeepEqual(got, want) {
		t.Errorf("tables = %q", got)
	}
	if got := versions(t, s.w); len(got) != SchemaVersion() || got[len(got)-1] != SchemaVersion() {
		t.Errorf("versions = %v, want 1..%d", got, SchemaVersion())
	}
	var mode string
	check(t, s.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode))
	var fk, busy int
	check(t, s.r.QueryRow(`PRAGMA foreign_keys`).Scan(&fk))
	check(t, s.r.QueryRow(`PRAGMA busy_timeout`).Scan(&busy))
	if mode != "wal" || fk != 1 || busy != int(DefaultBusyTimeout.Milliseconds()) {
		t.Errorf("journal_mode %s, foreign_keys %d, busy_timeout %d", mode, fk, busy)
	}
	newRun(t, s, "r")
	check(t, s.Close())

	// Reopening applies nothing again and keeps the data.
	for range 2 {
		s, err = Open(ctx, path)
		check(t, err)
		if got := versions(t, s.w); len(got) != SchemaVersion() {
			t.Errorf("versions after reopen = %v", got)
		}
		if _, err := s.GetRun(ctx, "r"); err != nil {
			t.Error(err)
		}
		check(t, s.Close())
	}
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "history.db")
	s, err := Open(ctx, path)
	check(t, err)
	newRun(t, s, "r")
	_, err = s.w.Exec(`INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'later')`, SchemaVersion()+1)
	check(t, err)
	check(t, s.Close())

	_, err = Open(ctx, path)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("err = %v, want ErrNewerSchema", err)
	}
	t.Log(err)

	// The file is untouched: the newer version is still recorded and the
	// data is there.
	db, err := sql.Open("sqlite", path)
	check(t, err)
	defer db.Close()
	if got := versions(t, db); got[len(got)-1] != SchemaVersion()+1 {
		t.Errorf("versions = %v", got)
	}
	var n int
	check(t, db.QueryRow(`SELECT count(*) FROM candidates`).Scan(&n))
	if n != 1 {
		t.Errorf("%d candidates", n)
	}
}

func TestOpenRefusesOtherFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()

	other := filepath.Join(dir, "other.db")
	db, err := sql.Open("sqlite", other)
	check(t, err)
	_, err = db.Exec(`CREATE TABLE users (name TEXT)`)
	check(t, err)
	check(t, db.Close())
	if _, err := Open(ctx, other); !errors.Is(err, ErrNotStore) {
		t.Errorf("other database: err = %v, want ErrNotStore", err)
	}

	garbage := filepath.Join(dir, "garbage.db")
	check(t, os.WriteFile(garbage, []byte("this is not an SQLite file, it is a text file long enough to have a header"), 0o644))
	if _, err := Open(ctx, garbage); err == nil {
		t.Error("opened a text file")
	}
	if _, err := Open(ctx, ""); !errors.Is(err, ErrInvalid) {
		t.Errorf("empty path: %v", err)
	}
}

func TestOpenPathWithURICharacters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a dir?x=1#frag%20", "history.db")
	s, err := Open(ctx, path)
	check(t, err)
	newRun(t, s, "r")
	check(t, s.Close())
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the file is not where asked: %v", err)
	}
}

// TestMigrateSteps checks the runner on a made-up history: an upgrade applies
// only the missing steps, and a failing step leaves nothing behind.
func TestMigrateSteps(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	check(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)

	v1 := []migration{{version: 1, statements: []string{`CREATE TABLE a (x INTEGER)`, `INSERT INTO a VALUES (1)`}}}
	v2 := append(v1, migration{version: 2, statements: []string{`ALTER TABLE a ADD COLUMN y TEXT NOT NULL DEFAULT 'two'`}})
	bad := append(v2[:2:2], migration{version: 3, statements: []string{`CREATE TABLE b (z)`, `INSERT INTO nowhere VALUES (1)`}})

	check(t, migrate(ctx, db, v1, "t1"))
	check(t, migrate(ctx, db, v1, "t1")) // idempotent
	check(t, migrate(ctx, db, v2, "t2"))
	if got := versions(t, db); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("versions = %v", got)
	}
	var n int
	var y string
	check(t, db.QueryRow(`SELECT count(*), min(y) FROM a`).Scan(&n, &y))
	if n != 1 || y != "two" {
		t.Errorf("a: %d rows, y = %q (v1 applied twice?)", n, y)
	}

	if err := migrate(ctx, db, bad, "t3"); err == nil {
		t.Fatal("a failing migration succeeded")
	}
	if got := versions(t, db); !reflect.DeepEqual(got, []int{1, 2}) {
		t.Errorf("versions after failure = %v", got)
	}
	if got := tables(t, db); !reflect.DeepEqual(got, []string{"a", "schema_migrations"}) {
		t.Errorf("tables after failure = %q (half a migration left)", got)
	}
	if err := migrate(ctx, db, v1, "t4"); !errors.Is(err, ErrNewerSchema) {
		t.Errorf("older list: err = %v, want ErrNewerSchema", err)
	}
	if err := migrate(ctx, db, []migration{{version: 2}}, "t5"); !errors.Is(err, ErrInvalid) {
		t.Errorf("misnumbered list: err = %v, want ErrInvalid", err)
	}
}

// TestSlotColumn: version 2 gives rows of version 1 their slot from their
// id, and a candidate's slot and inspirations round-trip.
func TestSlotColumn(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	check(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	check(t, migrate(ctx, db, migrations[:1], "t1"))
	_, err = db.Exec(`INSERT INTO runs (id, kernel_dir, input_id, started_at, status) VALUES ('r', '/k', 'input', 't', 'running')`)
	check(t, err)
	_, err = db.Exec(`INSERT INTO rounds (run_id, idx, started_at) VALUES ('r', 0, 't'), ('r', 1, 't'), ('r', 12, 't')`)
	check(t, err)
	for _, row := range [][2]any{{"input", 0}, {"r1c1", 1}, {"r12c3f2", 12}, {"r1c10", 1}} {
		_, err = db.Exec(`INSERT INTO candidates (run_id, id, round, source, source_hash, status, created_at, updated_at)
			VALUES ('r', ?, ?, 's', 'h', 'proposed', 't', 't')`, row[0], row[1])
		check(t, err)
	}
	check(t, migrate(ctx, db, migrations, "t2"))
	got := map[string]int{}
	rows, err := db.Query(`SELECT id, slot FROM candidates`)
	check(t, err)
	for rows.Next() {
		var id string
		var slot int
		check(t, rows.Scan(&id, &slot))
		got[id] = slot
	}
	check(t, rows.Err())
	if want := map[string]int{"input": 0, "r1c1": 1, "r12c3f2": 3, "r1c10": 10}; !reflect.DeepEqual(got, want) {
		t.Errorf("slots %v, want %v", got, want)
	}

	s := openTest(t)
	run := newRun(t, s, "run")
	first := must[Candidate](t)(s.AddCandidate(ctx, Candidate{RunID: run.ID, ID: "r0c1", Round: 0, Slot: 1, ParentID: run.InputID, Source: kernelSource("a")}))
	c := must[Candidate](t)(s.AddCandidate(ctx, Candidate{RunID: run.ID, ID: "r0c2", Round: 0, Slot: 2, ParentID: run.InputID,
		Inspirations: []string{first.ID}, Source: kernelSource("b")}))
	back := must[Candidate](t)(s.Candidate(ctx, run.ID, c.ID))
	if back.Slot != 2 || !reflect.DeepEqual(back.Inspirations, []string{"r0c1"}) {
		t.Errorf("read back slot %d, inspirations %v", back.Slot, back.Inspirations)
	}
	if _, err := s.AddCandidate(ctx, Candidate{RunID: run.ID, ID: "r0c3", Round: 0, Slot: 3, ParentID: run.InputID,
		Inspirations: []string{"r9c9"}, Source: kernelSource("c")}); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unknown inspiration: %v, want ErrNotFound", err)
	}
	if _, err := s.AddCandidate(ctx, Candidate{RunID: run.ID, ID: "r0 c4", Round: 0, Source: kernelSource("d")}); !errors.Is(err, ErrInvalid) {
		t.Errorf("an id with a space: %v, want ErrInvalid", err)
	}
}

// TestUsageEstimatedColumn: version 3 marks the calls of earlier versions as
// reported, not estimated.
func TestUsageEstimatedColumn(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	check(t, err)
	defer db.Close()
	db.SetMaxOpenConns(1)
	check(t, migrate(ctx, db, migrations[:2], "t1"))
	_, err = db.Exec(`INSERT INTO runs (id, kernel_dir, input_id, started_at, status) VALUES ('r', '/k', 'input', 't', 'running')`)
	check(t, err)
	_, err = db.Exec(`INSERT INTO llm_calls (run_id, purpose, prompt_tokens, completion_tokens, at) VALUES ('r', 'optimize', 10, 5, 't')`)
	check(t, err)
	check(t, migrate(ctx, db, migrations, "t2"))
	u, err := func() (Usage, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return Usage{}, err
		}
		defer tx.Rollback()
		return llmUsage(ctx, tx, "r")
	}()
	check(t, err)
	if u.Calls != 1 || u.PromptTokens != 10 || u.EstimatedCalls != 0 {
		t.Errorf("usage after the migration = %+v", u.Totals)
	}
	if _, err := db.Exec(`UPDATE llm_calls SET usage_estimated = 2`); err == nil {
		t.Error("usage_estimated took 2")
	}
}
