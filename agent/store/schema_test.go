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
