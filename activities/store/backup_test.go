package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The backup and restore procedures of deploy/README.md, run as an
// operator runs them: a backup taken while the store is open and
// written, restored into a fresh place, serves every session it had (its
// settings, its transcript, its message map, its feedback) and takes new
// writes.

// fillForBackup writes what a session leaves in the store and returns
// the session's transcript ID.
func fillForBackup(t *testing.T, s *Store) string {
	ctx := context.Background()
	e, err := s.SessionEntry(ctx, "session:telegram:42")
	require.NoError(t, err)
	e.ModelOverride, e.ThinkLevel, e.QueueJSON, e.Verbose, e.Muted = "openai/gpt-4o-mini", "high", `{"mode":"collect"}`, true, true
	require.NoError(t, s.SaveSettings(ctx, e))
	transcript, err := s.StartTranscript(ctx, "session:telegram:42", "turn-3")
	require.NoError(t, err)
	now := time.Now().UTC()
	require.NoError(t, s.Append(ctx, transcript, []Message{
		{Key: "in-1", Role: "user", Sender: "alice", Body: "what is on today?", CreatedAt: now},
		{Key: "out-1", Role: "assistant", Body: "two meetings", CreatedAt: now.Add(time.Second)},
	}))
	require.NoError(t, s.MapMessage(ctx, "session:telegram:42", "out-1", "tg-9001"))
	require.NoError(t, s.AddFeedback(ctx, Feedback{EventID: "upd-1", SessionID: "session:telegram:42", MessageID: "out-1", SenderID: "alice", Emoji: "👍", CreatedAt: now}))
	_, err = s.SessionEntry(ctx, "session:webchat:bob")
	require.NoError(t, err)
	return transcript
}

// writeAfterBackup writes to the live store after its backup, and
// stops it as the restore wants.
func writeAfterBackup(t *testing.T, s *Store) {
	require.NoError(t, s.MapMessage(context.Background(), "session:telegram:42", "out-after", "tg-after"))
	require.NoError(t, s.Close())
}

// checkRestored opens the restored store: it serves what fillForBackup
// wrote and nothing writeAfterBackup did, and goes on.
func checkRestored(t *testing.T, dsn, transcript string) {
	ctx := context.Background()
	s, err := Open(ctx, dsn)
	require.NoError(t, err)
	defer s.Close()
	_, ok, err := s.PlatformID(ctx, "session:telegram:42", "out-after")
	require.NoError(t, err)
	assert.False(t, ok, "what was written after the backup is not in it")
	e, err := s.SessionEntry(ctx, "session:telegram:42")
	require.NoError(t, err)
	assert.Equal(t, transcript, e.TranscriptID, "the session's transcript")
	assert.Equal(t, "openai/gpt-4o-mini", e.ModelOverride)
	assert.Equal(t, "high", e.ThinkLevel)
	assert.Equal(t, `{"mode":"collect"}`, e.QueueJSON)
	assert.True(t, e.Verbose)
	assert.True(t, e.Muted)
	msgs, err := s.Recent(ctx, transcript, 10)
	require.NoError(t, err)
	require.Len(t, msgs, 2)
	assert.Equal(t, "what is on today?", msgs[0].Body)
	assert.Equal(t, "two meetings", msgs[1].Body)
	platform, ok, err := s.PlatformID(ctx, "session:telegram:42", "out-1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "tg-9001", platform, "an edit or a reaction still finds the platform's message")
	internal, ok, err := s.InternalID(ctx, "session:telegram:42", "tg-9001")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "out-1", internal)
	fb, err := s.Feedbacks(ctx, "session:telegram:42")
	require.NoError(t, err)
	require.Len(t, fb, 1)
	assert.Equal(t, "👍", fb[0].Emoji)
	bob, err := s.SessionEntry(ctx, "session:webchat:bob")
	require.NoError(t, err)
	assert.Equal(t, "session:webchat:bob#1", bob.TranscriptID)

	require.NoError(t, s.Append(ctx, transcript, []Message{{Key: "in-2", Role: "user", Sender: "alice", Body: "and tomorrow?", CreatedAt: time.Now().UTC()}}))
	msgs, err = s.Recent(ctx, transcript, 10)
	require.NoError(t, err)
	assert.Len(t, msgs, 3, "the restored store takes new writes")
}

// TestBackupAndRestoreOnSQLite: `VACUUM INTO` while the worker has the
// store open (a consistent copy, WAL included), and the copy put in
// place of the file, its old -wal and -shm removed.
func TestBackupAndRestoreOnSQLite(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	live := filepath.Join(dir, "replyflow.db")
	s, err := Open(ctx, live)
	require.NoError(t, err)
	defer s.Close()
	transcript := fillForBackup(t, s)

	backup := filepath.Join(dir, "backup", "replyflow-backup.db")
	require.NoError(t, os.MkdirAll(filepath.Dir(backup), 0o700))
	statement := "VACUUM INTO '" + backup + "'"
	if cli, err := exec.LookPath("sqlite3"); err == nil {
		out, err := exec.Command(cli, live, statement).CombinedOutput()
		require.NoError(t, err, "sqlite3: %s", out)
	} else {
		// The same statement through the same SQLite, where the sqlite3
		// shell is not installed.
		t.Log("sqlite3 is not installed here: VACUUM INTO runs through the Go driver")
		db, err := sql.Open("sqlite", "file:"+live+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
		_, err = db.ExecContext(ctx, statement)
		db.Close()
		require.NoError(t, err)
	}
	writeAfterBackup(t, s)

	// The restore, the worker stopped: the copy in place of the file, and
	// the old file's WAL removed, or SQLite would replay it onto the copy.
	data, err := os.ReadFile(backup)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(live, data, 0o600))
	for _, suffix := range []string{"-wal", "-shm"} {
		require.NoError(t, os.RemoveAll(live+suffix))
	}
	checkRestored(t, live, transcript)
}

// TestBackupAndRestoreOnPostgreSQL: pg_dump's custom format while the
// store is open, restored with pg_restore into a new database.
func TestBackupAndRestoreOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	for _, tool := range []string{"pg_dump", "pg_restore"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("SKIPPED: %s is not installed here (apt-get install postgresql-client), so the PostgreSQL backup procedure is not tested in this run", tool)
		}
	}
	ctx := context.Background()
	admin, err := sql.Open("pgx", base)
	require.NoError(t, err)
	// Closed after the databases' drops, which are registered later.
	t.Cleanup(func() { admin.Close() })
	database := func() string {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		name := "replyflow_backup_" + hex.EncodeToString(b)
		_, err := admin.ExecContext(ctx, "CREATE DATABASE "+name)
		require.NoError(t, err, "the backup test needs the right to create databases at %s", base)
		t.Cleanup(func() {
			_, _ = admin.ExecContext(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		})
		u, err := url.Parse(base)
		require.NoError(t, err)
		u.Path = "/" + name
		return u.String()
	}

	liveDSN := database()
	s, err := Open(ctx, liveDSN)
	require.NoError(t, err)
	defer s.Close()
	transcript := fillForBackup(t, s)
	dump := filepath.Join(t.TempDir(), "replyflow.dump")
	out, err := exec.Command("pg_dump", "--format=custom", "--file="+dump, liveDSN).CombinedOutput()
	require.NoError(t, err, "pg_dump: %s", out)
	writeAfterBackup(t, s)

	restoredDSN := database()
	out, err = exec.Command("pg_restore", "--no-owner", "--exit-on-error", "--dbname="+restoredDSN, dump).CombinedOutput()
	require.NoError(t, err, "pg_restore: %s", out)
	checkRestored(t, restoredDSN, transcript)
}
