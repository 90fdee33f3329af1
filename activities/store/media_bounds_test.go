package store

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func TestMediaBoundsOnSQLite(t *testing.T) {
	mediaBoundsSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestMediaBoundsOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	mediaBoundsSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

// kept are the files of a session's messages whose content or
// transcript the store still holds, as "message/seq".
func kept(t *testing.T, s *Store, sessionID string, messageIDs ...string) []string {
	t.Helper()
	got, err := s.MessageMedia(context.Background(), sessionID, messageIDs)
	require.NoError(t, err)
	var out []string
	for _, id := range messageIDs {
		for _, m := range got[id] {
			if m.Content != "" || m.Transcript != "" {
				out = append(out, fmt.Sprintf("%s/%d", m.MessageID, m.Seq))
			}
		}
	}
	return out
}

func mediaBoundsSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	open := func(t *testing.T) *Store {
		s, err := Open(ctx, dsn(t))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s
	}
	photo := []pipeline.Media{{Kind: "photo", Ref: "p", MimeType: "image/jpeg"}}
	save := func(t *testing.T, s *Store, session, msg string, n int) {
		t.Helper()
		require.NoError(t, s.RecordMedia(ctx, session, msg, photo))
		require.NoError(t, s.SaveMediaContent(ctx, session, msg, 0, base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", n))), ""))
	}

	t.Run("past a chat's file count the content kept longest ago is dropped, the row stays", func(t *testing.T) {
		s := open(t)
		s.SetMediaLimits(MediaLimits{ChatFiles: 2})
		save(t, s, "chat-a", "m1", 30)
		save(t, s, "chat-a", "m2", 30)
		save(t, s, "chat-b", "m1", 30)
		backdate(t, s, "inbound_media", "stored_at", time.Hour, "message_id = ?", "m1")
		save(t, s, "chat-a", "m3", 30)
		assert.Equal(t, []string{"m2/0", "m3/0"}, kept(t, s, "chat-a", "m1", "m2", "m3"))
		assert.Equal(t, []string{"m1/0"}, kept(t, s, "chat-b", "m1"), "another chat's files are its own")
		got, err := s.MessageMedia(ctx, "chat-a", []string{"m1"})
		require.NoError(t, err)
		assert.Len(t, got["m1"], 1, "the reference stays: a later turn downloads it again")
	})

	t.Run("past a chat's bytes the older content is dropped, the newest always kept", func(t *testing.T) {
		s := open(t)
		s.SetMediaLimits(MediaLimits{ChatFiles: 10, ChatBytes: 300})
		save(t, s, "chat", "m1", 150) // 200 bytes as base64
		backdate(t, s, "inbound_media", "stored_at", time.Hour)
		save(t, s, "chat", "m2", 75) // 100
		assert.Equal(t, []string{"m1/0", "m2/0"}, kept(t, s, "chat", "m1", "m2"))
		save(t, s, "chat", "m3", 75)
		assert.Equal(t, []string{"m2/0", "m3/0"}, kept(t, s, "chat", "m1", "m2", "m3"))
		save(t, s, "chat", "m4", 600)
		assert.Equal(t, []string{"m4/0"}, kept(t, s, "chat", "m1", "m2", "m3", "m4"), "one larger than the bound is kept alone")
	})

	t.Run("content is swept after its retention, the row by its own", func(t *testing.T) {
		s := open(t)
		s.SetRetention(Retention{ToolResults: 10 * day, Media: 2 * day})
		assert.Equal(t, 2*day, s.Retention().Media)
		save(t, s, "chat", "m1", 30)
		backdate(t, s, "inbound_media", "stored_at", 2*day+time.Hour)
		save(t, s, "chat", "m2", 30)
		assert.Equal(t, []string{"m2/0"}, kept(t, s, "chat", "m1", "m2"))
		got, err := s.MessageMedia(ctx, "chat", []string{"m1"})
		require.NoError(t, err)
		assert.Len(t, got["m1"], 1)

		s.SetRetention(Retention{ToolResults: 10 * day})
		assert.Equal(t, 10*day, s.Retention().Media, "zero keeps the content as long as its row")
	})
}
