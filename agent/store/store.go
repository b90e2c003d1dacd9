package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// DefaultBusyTimeout is how long a write waits for another process's write
// transaction before giving up.
const DefaultBusyTimeout = 10 * time.Second

// Store is an open history file. It is safe for concurrent use by several
// goroutines, and several processes may open the same file: writes are
// serialised (one write connection per Store, SQLite's lock between
// processes), reads run concurrently on their own connections and see the
// last committed state.
type Store struct {
	path string
	w    *sql.DB // one connection; transactions BEGIN IMMEDIATE
	r    *sql.DB // read-only connections
	now  func() time.Time
	// beforeCommit, when set (tests), runs inside every write transaction
	// just before it commits.
	beforeCommit func()

	closeOnce sync.Once
	closeErr  error
}

// Option configures Open.
type Option func(*options)

type options struct {
	now         func() time.Time
	busyTimeout time.Duration
	readers     int
}

// WithClock sets the clock that stamps records (tests).
func WithClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// WithBusyTimeout sets how long a write waits for another process's lock.
func WithBusyTimeout(d time.Duration) Option { return func(o *options) { o.busyTimeout = d } }

// Open opens the history file at path, creating it (and its directory) when
// missing, and migrates it to the current schema. A file written by a newer
// kagent is ErrNewerSchema; an SQLite file of something else is ErrNotStore.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := options{now: time.Now, busyTimeout: DefaultBusyTimeout, readers: 4}
	for _, opt := range opts {
		opt(&o)
	}
	if path == "" {
		return nil, fmt.Errorf("open store: empty path: %w", ErrInvalid)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Store{path: abs, now: o.now}

	base := "file:" + (&url.URL{Path: abs}).EscapedPath() +
		"?_busy_timeout=" + strconv.FormatInt(o.busyTimeout.Milliseconds(), 10) +
		"&_foreign_keys=1"
	s.w, err = sql.Open("sqlite", base+"&_journal_mode=WAL&_synchronous=FULL&_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxIdleTime(0)
	if err := s.w.PingContext(ctx); err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if err := migrate(ctx, s.w, migrations, s.stamp()); err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.r, err = sql.Open("sqlite", base+"&_query_only=1")
	if err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s.r.SetMaxOpenConns(o.readers)
	s.r.SetMaxIdleConns(o.readers)
	return s, nil
}

// Path is the absolute path of the history file.
func (s *Store) Path() string { return s.path }

// Close closes the file. It is safe to call more than once.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closeErr = errors.Join(s.r.Close(), s.w.Close())
		if s.closeErr != nil {
			s.closeErr = fmt.Errorf("close store %s: %w", s.path, s.closeErr)
		}
	})
	return s.closeErr
}

// write runs fn in one write transaction (BEGIN IMMEDIATE: the write lock is
// taken up front, so the transaction never fails half-way on a lock upgrade).
// fn's error rolls everything back.
func (s *Store) write(ctx context.Context, fn func(tx *sql.Tx) error) (err error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if s.beforeCommit != nil {
		s.beforeCommit()
	}
	return tx.Commit()
}

// read runs fn in one read transaction: every query in it sees the same
// committed snapshot.
func (s *Store) read(ctx context.Context, fn func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	return fn(tx)
}

// timeLayout is fixed-width UTC, so stamps sort as text and read well in the
// sqlite3 shell.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func (s *Store) stamp() string { return formatTime(s.now()) }

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }

func parseTime(v sql.NullString) (time.Time, error) {
	if !v.Valid || v.String == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(timeLayout, v.String)
	if err != nil {
		return time.Time{}, fmt.Errorf("parse time %q: %w", v.String, err)
	}
	return t, nil
}

// sqliteCode is the extended result code of an SQLite error, or 0.
func sqliteCode(err error) int {
	var e *sqlite.Error
	if errors.As(err, &e) {
		return e.Code()
	}
	return 0
}

// isUniqueViolation reports a primary-key or unique constraint failure.
func isUniqueViolation(err error) bool {
	c := sqliteCode(err)
	return c == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY || c == sqlite3.SQLITE_CONSTRAINT_UNIQUE
}

// nullString maps "" to NULL.
func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

// nullRound maps NoRound (or any negative index) to NULL.
func nullRound(r int) sql.NullInt64 { return sql.NullInt64{Int64: int64(r), Valid: r >= 0} }

func roundOf(v sql.NullInt64) int {
	if !v.Valid {
		return NoRound
	}
	return int(v.Int64)
}

// addEvent writes one event inside tx.
func (s *Store) addEvent(ctx context.Context, tx *sql.Tx, e Event) error {
	at := e.At
	if at.IsZero() {
		at = s.now()
	}
	var data sql.NullString
	if len(e.Data) > 0 {
		data = sql.NullString{String: string(e.Data), Valid: true}
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO events (run_id, round, candidate_id, at, kind, message, data)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.RunID, nullRound(e.Round), e.CandidateID, formatTime(at), e.Kind, e.Message, data)
	if err != nil {
		return fmt.Errorf("add event %s: %w", e.Kind, err)
	}
	return nil
}
