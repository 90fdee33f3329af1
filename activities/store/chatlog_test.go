package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
)

func TestChatLogOnSQLite(t *testing.T) {
	chatLogSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestChatLogOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	chatLogSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

func chatLogSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	open := func(t *testing.T, d string) *Store {
		s, err := Open(ctx, d)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	msg := func(chat, id, key, data string) adapters.ChatLogMessage {
		return adapters.ChatLogMessage{Chat: chat, ID: id, Key: key, Kind: "message", Data: []byte(data)}
	}
	ids := func(t *testing.T, s *Store, chat string) []string {
		got, err := s.ChatMessages(ctx, chat)
		require.NoError(t, err)
		var out []string
		for _, m := range got {
			out = append(out, m.ID)
		}
		return out
	}

	t.Run("messages, edits and reactions are kept in order, a key once, and read by another process", func(t *testing.T) {
		d := dsn(t)
		a, b := open(t, d), open(t, d)
		id, fresh, err := a.AddChatMessage(ctx, adapters.ChatLogMessage{Chat: "c", ID: "u1", Key: "user:u1", Kind: "user", Data: []byte(`{"text":"hi"}`)})
		require.NoError(t, err)
		assert.Equal(t, "u1", id)
		assert.True(t, fresh)
		id, fresh, err = b.AddChatMessage(ctx, msg("c", "b1", "k1", `{"text":"pre"}`))
		require.NoError(t, err)
		assert.Equal(t, "b1", id)
		assert.True(t, fresh)
		// A retried send, through the other gateway: the first ID.
		id, fresh, err = a.AddChatMessage(ctx, msg("c", "b-other", "k1", `{"text":"pre"}`))
		require.NoError(t, err)
		assert.Equal(t, "b1", id)
		assert.False(t, fresh)
		require.NoError(t, a.EditChatMessage(ctx, "c", "b1", []byte(`{"text":"preview, done"}`)))
		require.NoError(t, b.SetChatReaction(ctx, "c", "u1", "✅"))
		require.NoError(t, b.SetChatReaction(ctx, "c", "gone", "✅"), "a message no longer kept is no error")

		got, err := b.ChatMessages(ctx, "c")
		require.NoError(t, err)
		assert.Equal(t, []adapters.ChatLogMessage{
			{Chat: "c", ID: "u1", Kind: "user", Data: []byte(`{"text":"hi"}`), Reaction: "✅"},
			{Chat: "c", ID: "b1", Kind: "message", Data: []byte(`{"text":"preview, done"}`)},
		}, got)
		assert.Empty(t, ids(t, a, "other"), "chats are apart")

		one, ok, err := a.ChatMessage(ctx, "c", "u1")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, got[0], one, "one message, by its ID")
		_, ok, err = a.ChatMessage(ctx, "other", "u1")
		require.NoError(t, err)
		assert.False(t, ok, "in its own chat only")
	})

	t.Run("two processes sending one key at once record it once", func(t *testing.T) {
		d := dsn(t)
		stores := []*Store{open(t, d), open(t, d)}
		var wg sync.WaitGroup
		got := make([]string, 8)
		for i := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				id, _, err := stores[i%2].AddChatMessage(ctx, msg("race", fmt.Sprintf("b%d", i), "same", `{}`))
				assert.NoError(t, err)
				got[i] = id
			}()
		}
		wg.Wait()
		for _, id := range got {
			assert.Equal(t, got[0], id)
		}
		assert.Equal(t, []string{got[0]}, ids(t, stores[0], "race"))
	})

	t.Run("a chat keeps its newest messages within its count and bytes", func(t *testing.T) {
		s := open(t, dsn(t))
		for i := range ChatLogMessages + 5 {
			_, _, err := s.AddChatMessage(ctx, msg("many", fmt.Sprintf("m%03d", i), fmt.Sprintf("k%d", i), `{}`))
			require.NoError(t, err)
		}
		kept := ids(t, s, "many")
		require.Len(t, kept, ChatLogMessages)
		assert.Equal(t, "m005", kept[0], "the oldest go first")

		big := strings.Repeat("x", ChatLogBytes/3)
		for i := range 4 {
			_, _, err := s.AddChatMessage(ctx, msg("big", fmt.Sprintf("f%d", i), fmt.Sprintf("k%d", i), big))
			require.NoError(t, err)
		}
		assert.Equal(t, []string{"f1", "f2", "f3"}, ids(t, s, "big"))
		// An edit that grows a message trims too.
		require.NoError(t, s.EditChatMessage(ctx, "big", "f3", []byte(big+big)))
		assert.Equal(t, []string{"f2", "f3"}, ids(t, s, "big"))
	})

	t.Run("a message not written for the retention is gone", func(t *testing.T) {
		s := open(t, dsn(t))
		s.SetRetention(Retention{ChatLog: day})
		_, _, err := s.AddChatMessage(ctx, msg("old", "o1", "k1", `{}`))
		require.NoError(t, err)
		backdate(t, s, "chat_log", "updated_at", 2*day)
		assert.Empty(t, ids(t, s, "old"), "not shown once past the retention")
		_, _, err = s.AddChatMessage(ctx, msg("new", "n1", "k1", `{}`))
		require.NoError(t, err)
		var rows int
		require.NoError(t, s.db.QueryRow(s.q(`SELECT COUNT(*) FROM chat_log WHERE chat = ?`), "old").Scan(&rows))
		assert.Zero(t, rows, "and deleted by the next write")
	})
}
