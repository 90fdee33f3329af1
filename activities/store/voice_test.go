package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A chat's voice replies: unset until someone switches them, then one
// row per chat whose last switch wins; other chats are untouched.
func TestVoiceReplies(t *testing.T) {
	check := func(t *testing.T, dsn string) {
		ctx := context.Background()
		s, err := Open(ctx, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		on, set, err := s.VoiceReplies(ctx, "session:telegram:1")
		require.NoError(t, err)
		assert.False(t, on)
		assert.False(t, set, "a chat nobody switched follows the default")

		at := time.Date(2026, 11, 27, 7, 0, 0, 0, time.UTC)
		require.NoError(t, s.SetVoiceReplies(ctx, "session:telegram:1", true, "telegram:42", at))
		require.NoError(t, s.SetVoiceReplies(ctx, "session:telegram:2", false, "telegram:43", at))
		on, set, err = s.VoiceReplies(ctx, "session:telegram:1")
		require.NoError(t, err)
		assert.True(t, on)
		assert.True(t, set)
		require.NoError(t, s.SetVoiceReplies(ctx, "session:telegram:1", false, "telegram:42", at.Add(time.Minute)))
		require.NoError(t, s.SetVoiceReplies(ctx, "session:telegram:1", false, "telegram:42", at.Add(time.Minute)), "idempotent")
		on, set, err = s.VoiceReplies(ctx, "session:telegram:1")
		require.NoError(t, err)
		assert.False(t, on)
		assert.True(t, set, "switched off is not the default")

		var rows int
		require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM voice_replies`).Scan(&rows))
		assert.Equal(t, 2, rows, "one row per chat")
	}
	t.Run("SQLite", func(t *testing.T) {
		check(t, filepath.Join(t.TempDir(), "store.db"))
	})
	t.Run("PostgreSQL", func(t *testing.T) {
		check(t, freshDatabase(t, postgresBase(t)))
	})
}
