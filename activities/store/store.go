// Package store keeps what outlives a workflow run: session entries,
// transcripts, the internal-to-platform message ID map and reaction
// feedback. SQLite (a pure-Go driver, no cgo) is the embedded default;
// PostgreSQL serves several workers. Migrations are embedded.
//
// Only activities use it. Every write is idempotent, keyed by turn and
// message IDs, because activities run at least once.
// Every table has a retention (retention.go says which, and how long).
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // PostgreSQL driver "pgx"
	_ "modernc.org/sqlite"             // SQLite driver "sqlite"
)

//go:embed migrations/*.sql
var migrations embed.FS

// postgresMaxConns bounds one process's connections to PostgreSQL: each
// store call is one short statement or transaction, so a few connections
// serve hundreds of running activities (the rest wait their turn), and
// several workers beside a Temporal cluster on the same server stay far
// below its max_connections (100 by default).
const postgresMaxConns = 8

// Store is the database behind the activities.
type Store struct {
	db        *sql.DB
	postgres  bool
	retention Retention
	// sealer encrypts the bytes and transcripts of users' files
	// (SetSealer); nil keeps them in clear.
	sealer Sealer
	// mediaLimits bound the files' content kept per chat.
	mediaLimits MediaLimits
}

// Open opens the store named by dsn: a postgres:// (or postgresql://) URL,
// or a SQLite file path (its folder is created), and applies migrations.
func Open(ctx context.Context, dsn string) (*Store, error) {
	s := &Store{retention: DefaultRetention(), mediaLimits: DefaultMediaLimits()}
	var err error
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		s.postgres = true
		if s.db, err = sql.Open("pgx", dsn); err == nil {
			s.db.SetMaxOpenConns(postgresMaxConns)
			s.db.SetMaxIdleConns(postgresMaxConns)
		}
	} else {
		if dir := filepath.Dir(dsn); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("create the store's folder %s: %w", dir, err)
			}
		}
		// Transactions begin IMMEDIATE: they take the write lock first
		// (waiting up to the busy timeout), so two processes on one file
		// never read, then both write (the migration, Append).
		s.db, err = sql.Open("sqlite", "file:"+dsn+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=foreign_keys(1)&_txlock=immediate")
		if err == nil {
			// SQLite allows one writer; one connection avoids lock errors.
			s.db.SetMaxOpenConns(1)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open the store: %w", err)
	}
	if err := s.reach(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("reach the store (REPLYFLOW_STORE_DSN): %w", err)
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// reach pings the store. On SQLite the first connection switches the file
// to WAL, which SQLite answers with SQLITE_BUSY, without waiting on the busy
// timeout, while another process creates the same file (several workers
// started at once): that case is retried for up to the busy timeout.
func (s *Store) reach(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := s.db.PingContext(ctx)
		if err == nil || s.postgres || !strings.Contains(err.Error(), "SQLITE_BUSY") || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// migrationLock is the PostgreSQL advisory lock key that serializes
// migrations across processes ("replyflw" in ASCII).
const migrationLock int64 = 0x7265706c79666c77

// migrate applies the embedded migrations not yet recorded, all in one
// transaction. Several workers may open one empty database at once: on
// PostgreSQL the transaction first takes an advisory lock, on SQLite it
// begins IMMEDIATE (see Open), so the first one migrates and the others
// wait, then find every version recorded.
func (s *Store) migrate(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("start the migrations: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if s.postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLock); err != nil {
			return fmt.Errorf("wait for the migration lock (another replyflow process is migrating the store): %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version TEXT PRIMARY KEY)`); err != nil {
		return fmt.Errorf("prepare migrations: %w", err)
	}
	applied, err := appliedVersions(ctx, tx)
	if err != nil {
		return err
	}
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	sort.Strings(names)
	for _, name := range names {
		version := strings.TrimSuffix(filepath.Base(name), ".sql")
		if applied[version] {
			continue
		}
		body, _ := migrations.ReadFile(name)
		for _, stmt := range strings.Split(string(body), ";") {
			if strings.TrimSpace(stripComments(stmt)) == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %s: %w", version, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO schema_migrations (version) VALUES (?)`), version); err != nil {
			return fmt.Errorf("migration %s: %w", version, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit the migrations: %w", err)
	}
	return nil
}

func appliedVersions(ctx context.Context, tx *sql.Tx) (map[string]bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return nil, fmt.Errorf("read migrations: %w", err)
	}
	defer rows.Close()
	applied := map[string]bool{}
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("read migrations: %w", err)
		}
		applied[v] = true
	}
	return applied, rows.Err()
}

func stripComments(stmt string) string {
	var out []string
	for _, line := range strings.Split(stmt, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "--") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// q turns ? placeholders into PostgreSQL's $n.
func (s *Store) q(query string) string {
	if !s.postgres {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Entry is a session's settings that outlive its workflow runs.
type Entry struct {
	SessionID     string
	TranscriptID  string
	ModelOverride string
	ThinkLevel    string
	QueueJSON     string
	Activation    string
	// Verbose, UsageMode and Muted are /verbose, /usage and /send off.
	Verbose   bool
	UsageMode string
	Muted     bool
	UpdatedAt time.Time
}

// SessionEntry returns the session's entry, creating it (with a first
// transcript) if it has none.
// SavedSettings reads a session's entry without making one: a session
// with none has the defaults and its first transcript. Every session run
// reads it as it starts, the refused strangers' too, so it must leave no
// row behind: the entry is made when something is kept in it (a setting,
// a transcript).
func (s *Store) SavedSettings(ctx context.Context, sessionID string) (Entry, error) {
	e := Entry{SessionID: sessionID, TranscriptID: sessionID + "#1"}
	err := s.db.QueryRowContext(ctx, s.q(`SELECT transcript_id, model_override, think_level, queue_json, activation, tool_lines, usage_mode, muted, updated_at FROM sessions WHERE session_id = ?`), sessionID).
		Scan(&e.TranscriptID, &e.ModelOverride, &e.ThinkLevel, &e.QueueJSON, &e.Activation, &e.Verbose, &e.UsageMode, &e.Muted, &e.UpdatedAt)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return Entry{}, fmt.Errorf("read the session entry of %s: %w", sessionID, err)
	}
	return e, nil
}

// SessionEntry returns a session's entry, making it when there is none.
func (s *Store) SessionEntry(ctx context.Context, sessionID string) (Entry, error) {
	now := time.Now().UTC()
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO sessions (session_id, transcript_id, updated_at) VALUES (?, ?, ?) ON CONFLICT (session_id) DO NOTHING`),
		sessionID, sessionID+"#1", now)
	if err != nil {
		return Entry{}, fmt.Errorf("create the session entry of %s: %w", sessionID, err)
	}
	e := Entry{SessionID: sessionID}
	err = s.db.QueryRowContext(ctx, s.q(`SELECT transcript_id, model_override, think_level, queue_json, activation, tool_lines, usage_mode, muted, updated_at FROM sessions WHERE session_id = ?`), sessionID).
		Scan(&e.TranscriptID, &e.ModelOverride, &e.ThinkLevel, &e.QueueJSON, &e.Activation, &e.Verbose, &e.UsageMode, &e.Muted, &e.UpdatedAt)
	if err != nil {
		return Entry{}, fmt.Errorf("read the session entry of %s: %w", sessionID, err)
	}
	return e, nil
}

// SaveSettings stores the session's settings, keeping its transcript.
func (s *Store) SaveSettings(ctx context.Context, e Entry) error {
	if _, err := s.SessionEntry(ctx, e.SessionID); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.q(`UPDATE sessions SET model_override = ?, think_level = ?, queue_json = ?, activation = ?, tool_lines = ?, usage_mode = ?, muted = ?, updated_at = ? WHERE session_id = ?`),
		e.ModelOverride, e.ThinkLevel, e.QueueJSON, e.Activation, e.Verbose, e.UsageMode, e.Muted, time.Now().UTC(), e.SessionID)
	if err != nil {
		return fmt.Errorf("save the settings of %s: %w", e.SessionID, err)
	}
	return nil
}

// StartTranscript points the session at a new transcript named by key
// (a turn ID, so a repeated call does nothing new) and keeps its settings.
// The transcript it leaves is recorded as left, to be deleted
// Retention.Transcripts later.
func (s *Store) StartTranscript(ctx context.Context, sessionID, key string) (string, error) {
	if _, err := s.SessionEntry(ctx, sessionID); err != nil {
		return "", err
	}
	id := sessionID + "#" + key
	if err := s.startTranscript(ctx, sessionID, id); err != nil {
		return "", fmt.Errorf("start a new transcript for %s: %w", sessionID, err)
	}
	return id, nil
}

func (s *Store) startTranscript(ctx context.Context, sessionID, id string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var current string
	if err := tx.QueryRowContext(ctx, s.q(`SELECT transcript_id FROM sessions WHERE session_id = ?`), sessionID).Scan(&current); err != nil {
		return err
	}
	if current == id {
		return nil
	}
	now := time.Now().UTC()
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO abandoned_transcripts (transcript_id, abandoned_at) VALUES (?, ?) ON CONFLICT (transcript_id) DO UPDATE SET abandoned_at = excluded.abandoned_at`), current, now); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM abandoned_transcripts WHERE transcript_id = ?`), id); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE sessions SET transcript_id = ?, updated_at = ? WHERE session_id = ?`), id, now, sessionID); err != nil {
		return err
	}
	return tx.Commit()
}

// Message is one message of a transcript. Key makes its write idempotent
// (for example "<turn>/user" or "<turn>/assistant").
type Message struct {
	Key       string
	Role      string // "user" or "assistant"
	Sender    string
	Body      string
	CreatedAt time.Time
}

// Append adds messages to a transcript, in order; a message whose key is
// already there is skipped. On the way it trims the transcript to its
// retention (CurrentTranscriptKept at least) and deletes transcripts left
// longer ago than Retention.Transcripts.
func (s *Store) Append(ctx context.Context, transcriptID string, msgs []Message) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("append to transcript %s: %w", transcriptID, err)
	}
	defer func() { _ = tx.Rollback() }()
	var seq int64
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(seq), 0) FROM transcript_messages WHERE transcript_id = ?`), transcriptID).Scan(&seq); err != nil {
		return fmt.Errorf("append to transcript %s: %w", transcriptID, err)
	}
	for _, m := range msgs {
		seq++
		_, err := tx.ExecContext(ctx, s.q(`INSERT INTO transcript_messages (transcript_id, message_key, seq, role, sender, body, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (transcript_id, message_key) DO NOTHING`),
			transcriptID, m.Key, seq, m.Role, withoutNUL(m.Sender), withoutNUL(m.Body), m.CreatedAt.UTC())
		if err != nil {
			return fmt.Errorf("append %s to transcript %s: %w", m.Key, transcriptID, err)
		}
	}
	// The newest message's, as written: a message already there took no
	// new number.
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(seq), 0) FROM transcript_messages WHERE transcript_id = ?`), transcriptID).Scan(&seq); err != nil {
		return fmt.Errorf("append to transcript %s: %w", transcriptID, err)
	}
	cutoff := time.Now().Add(-s.retention.Transcripts)
	if err := s.trimCurrent(ctx, tx, transcriptID, seq, cutoff); err != nil {
		return err
	}
	if err := s.pruneAbandoned(ctx, tx, cutoff); err != nil {
		return err
	}
	return tx.Commit()
}

// Recent returns up to limit of a transcript's last messages, oldest first.
func (s *Store) Recent(ctx context.Context, transcriptID string, limit int) ([]Message, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT message_key, role, sender, body, created_at FROM transcript_messages WHERE transcript_id = ? ORDER BY seq DESC LIMIT ?`), transcriptID, limit)
	if err != nil {
		return nil, fmt.Errorf("read transcript %s: %w", transcriptID, err)
	}
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		if err := rows.Scan(&m.Key, &m.Role, &m.Sender, &m.Body, &m.CreatedAt); err != nil {
			return nil, fmt.Errorf("read transcript %s: %w", transcriptID, err)
		}
		out = append(out, m)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, rows.Err()
}

// MapMessage records the platform's ID of an internal message, filling
// its claim (ClaimSend) where it has one; an ID recorded before stays.
// It records first and then deletes the entries older than
// Retention.Deliveries, so a slow or failed prune loses no record.
func (s *Store) MapMessage(ctx context.Context, sessionID, internalID, platformID string) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO message_ids (session_id, internal_id, platform_id, created_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (session_id, internal_id) DO UPDATE SET platform_id = excluded.platform_id, pending_until = NULL WHERE message_ids.platform_id = ''`),
		sessionID, internalID, platformID, time.Now().UTC())
	if err != nil {
		return fmt.Errorf("map message %s of %s: %w", internalID, sessionID, err)
	}
	if err := s.prune(ctx, s.db, "message_ids", "session_id, internal_id", "created_at", time.Now().Add(-s.retention.Deliveries)); err != nil {
		return fmt.Errorf("prune the delivery ledger after mapping message %s of %s: %w", internalID, sessionID, err)
	}
	return nil
}

// ClaimSend asks the delivery ledger whether an attempt may send an
// internal message now. It returns the platform's ID when the message
// was sent before; the time another attempt's claim holds until, when
// one is sending it now; or neither, when this attempt has the claim,
// held until until. A claim ends when MapMessage records the message or
// ReleaseSend gives it back, or at its time: an attempt that was cut off
// or died is then taken over. Two attempts that ask at once get one
// claim between them.
func (s *Store) ClaimSend(ctx context.Context, sessionID, internalID string, until time.Time) (string, time.Time, error) {
	now := time.Now().UTC()
	res, err := s.db.ExecContext(ctx, s.q(`INSERT INTO message_ids (session_id, internal_id, platform_id, created_at, pending_until) VALUES (?, ?, '', ?, ?)
		ON CONFLICT (session_id, internal_id) DO NOTHING`), sessionID, internalID, now, until.UTC())
	if err != nil {
		return "", time.Time{}, fmt.Errorf("claim the sending of message %s of %s: %w", internalID, sessionID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return "", time.Time{}, nil
	}
	res, err = s.db.ExecContext(ctx, s.q(`UPDATE message_ids SET pending_until = ?, created_at = ?
		WHERE session_id = ? AND internal_id = ? AND platform_id = '' AND (pending_until IS NULL OR pending_until < ?)`),
		until.UTC(), now, sessionID, internalID, now)
	if err != nil {
		return "", time.Time{}, fmt.Errorf("take over the claim on message %s of %s: %w", internalID, sessionID, err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return "", time.Time{}, nil
	}
	var platformID string
	var held sql.NullTime
	err = s.db.QueryRowContext(ctx, s.q(`SELECT platform_id, pending_until FROM message_ids WHERE session_id = ? AND internal_id = ?`), sessionID, internalID).Scan(&platformID, &held)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		// Released or pruned between the two statements: ask again.
		return "", now.Add(time.Second), nil
	case err != nil:
		return "", time.Time{}, fmt.Errorf("read the claim on message %s of %s: %w", internalID, sessionID, err)
	case platformID != "":
		return platformID, time.Time{}, nil
	case !held.Valid || !held.Time.After(now):
		// The claim ran out between the two statements: ask again.
		return "", now.Add(time.Second), nil
	}
	return "", held.Time, nil
}

// ReleaseSend gives back a claim on a message that was not sent, so the
// next attempt sends it at once.
func (s *Store) ReleaseSend(ctx context.Context, sessionID, internalID string) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM message_ids WHERE session_id = ? AND internal_id = ? AND platform_id = ''`), sessionID, internalID); err != nil {
		return fmt.Errorf("release the claim on message %s of %s: %w", internalID, sessionID, err)
	}
	return nil
}

// PlatformID returns the platform's ID of an internal message that was
// sent (a claim is not one).
func (s *Store) PlatformID(ctx context.Context, sessionID, internalID string) (string, bool, error) {
	return s.lookup(ctx, `SELECT platform_id FROM message_ids WHERE session_id = ? AND internal_id = ? AND platform_id <> ''`, sessionID, internalID)
}

// InternalID returns the internal ID of a platform message.
func (s *Store) InternalID(ctx context.Context, sessionID, platformID string) (string, bool, error) {
	return s.lookup(ctx, `SELECT internal_id FROM message_ids WHERE session_id = ? AND platform_id = ?`, sessionID, platformID)
}

func (s *Store) lookup(ctx context.Context, query, sessionID, id string) (string, bool, error) {
	var out string
	err := s.db.QueryRowContext(ctx, s.q(query), sessionID, id).Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("look up message %s of %s: %w", id, sessionID, err)
	}
	return out, true, nil
}

// Feedback is a user's reaction on one of the bot's messages.
type Feedback struct {
	EventID    string // the platform's update ID, for idempotency
	SessionID  string
	MessageID  string // internal ID, or "<channel>:<chat>:<message>" when unresolved
	Unresolved bool
	SenderID   string
	Emoji      string
	CreatedAt  time.Time
}

// AddFeedback records a feedback event once. Events older than
// Retention.Feedback are deleted on the way.
func (s *Store) AddFeedback(ctx context.Context, f Feedback) error {
	if err := s.prune(ctx, s.db, "feedback_events", "event_id", "created_at", time.Now().Add(-s.retention.Feedback)); err != nil {
		return fmt.Errorf("record feedback %s: %w", f.EventID, err)
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO feedback_events (event_id, session_id, message_id, unresolved, sender_id, emoji, created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING`),
		f.EventID, f.SessionID, f.MessageID, f.Unresolved, withoutNUL(f.SenderID), withoutNUL(f.Emoji), f.CreatedAt.UTC())
	if err != nil {
		return fmt.Errorf("record feedback %s: %w", f.EventID, err)
	}
	return nil
}

// Feedbacks returns a session's feedback events, oldest first.
func (s *Store) Feedbacks(ctx context.Context, sessionID string) ([]Feedback, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT event_id, message_id, unresolved, sender_id, emoji, created_at FROM feedback_events WHERE session_id = ? ORDER BY created_at, event_id`), sessionID)
	if err != nil {
		return nil, fmt.Errorf("read feedback of %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []Feedback
	for rows.Next() {
		f := Feedback{SessionID: sessionID}
		if err := rows.Scan(&f.EventID, &f.MessageID, &f.Unresolved, &f.SenderID, &f.Emoji, &f.CreatedAt); err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, rows.Err()
}

// withoutNUL is free text (a user's or a model's words, a tool's output,
// a name) as both stores keep it: PostgreSQL's text takes no NUL and
// would refuse the whole write, failing the turn that makes it, so NUL
// is dropped on SQLite too and the two agree.
func withoutNUL(s string) string {
	return strings.ReplaceAll(s, "\x00", "")
}
