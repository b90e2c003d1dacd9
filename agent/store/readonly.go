package store

import (
	"context"
	"database/sql"

	"fmt"
	"net/url"
	"path/filepath"
	"time"
)

// OpenReadOnly opens an existing history file for reading only (kagent ui):
// nothing is created or migrated, and every write method fails. A missing
// file is an error; a file of another schema version than this kagent's is
// ErrNewerSchema (newer) or ErrInvalid (older: open it once with Open to
// migrate it).
func OpenReadOnly(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, fmt.Errorf("open store read-only: empty path: %w", ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s read-only: %w", path, err)
	}
	dsn := "file:" + (&url.URL{Path: abs}).EscapedPath() + "?mode=ro&_query_only=1&_busy_timeout=5000"
	s := &Store{path: abs, now: time.Now}
	if s.r, err = sql.Open("sqlite", dsn); err != nil {
		return nil, fmt.Errorf("open store %s read-only: %w", path, err)
	}
	s.r.SetMaxOpenConns(4)
	s.r.SetMaxIdleConns(4)
	// Writes go to a connection of its own that SQLite opened read-only:
	// they fail with SQLITE_READONLY.
	if s.w, err = sql.Open("sqlite", dsn); err != nil {
		_ = s.r.Close()
		return nil, fmt.Errorf("open store %s read-only: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	if err := checkVersion(ctx, s.r); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("open store %s read-only: %w", path, err)
	}
	return s, nil
}

// checkVersion makes sure the file holds this build's schema version.
func checkVersion(ctx context.Context, db *sql.DB) error {
	var current int
	err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current)
	switch {
	case err != nil && sqliteCode(err) == 1: // SQLITE_ERROR: no such table
		return fmt.Errorf("read schema version: %w", ErrNotStore)
	case err != nil:
		return fmt.Errorf("read schema version: %w", err)
	case current > SchemaVersion():
		return fmt.Errorf("file has schema version %d, this kagent knows up to %d (use a newer kagent): %w", current, SchemaVersion(), ErrNewerSchema)
	case current < SchemaVersion():
		return fmt.Errorf("file has schema version %d, this kagent writes %d (run kagent runs list on it once to migrate it): %w", current, SchemaVersion(), ErrInvalid)
	}
	return nil
}
