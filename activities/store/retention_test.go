package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// Every table the store prunes is pruned by its retention, on both
// databases; each case has a database of its own, since pruning is global.
func TestRetentionOnSQLite(t *testing.T) {
	retentionSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestRetentionOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	retentionSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

const day = 24 * time.Hour

func retentionSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	open := func(t *testing.T, r Retention) *Store {
		s, err := Open(ctx, dsn(t))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		s.SetRetention(r)
		return s
	}

	t.Run("the files of messages are recorded once and kept as long as the tool results", func(t *testing.T) {
		s := open(t, Retention{ToolResults: 10 * day})
		files := []pipeline.Media{{Kind: "photo", Ref: "p1", MimeType: "image/jpeg"}, {Kind: "voice", Ref: "v1", MimeType: "audio/ogg"}}
		require.NoError(t, s.RecordMedia(ctx, "sess", "m1", files))
		require.NoError(t, s.RecordMedia(ctx, "sess", "m1", files), "a redelivered message records nothing new")
		require.NoError(t, s.SaveMediaContent(ctx, "sess", "m1", 1, "", "hello"))
		got, err := s.MessageMedia(ctx, "sess", []string{"m1", "m2"})
		require.NoError(t, err)
		require.Len(t, got["m1"], 2)
		assert.Equal(t, "p1", got["m1"][0].Ref)
		assert.Equal(t, "hello", got["m1"][1].Transcript)
		assert.Error(t, s.RecordMedia(ctx, "sess", "m3", make([]pipeline.Media, pipeline.MaxMedia+1)))

		backdate(t, s, "inbound_media", "created_at", 10*day+time.Hour)
		require.NoError(t, s.RecordMedia(ctx, "sess", "m2", files[:1]))
		got, err = s.MessageMedia(ctx, "sess", []string{"m1", "m2"})
		require.NoError(t, err)
		assert.Empty(t, got["m1"], "pruned by the next write")
		assert.Len(t, got["m2"], 1)
	})

	t.Run("a turn's tool results outlive 48 h while its proposals may still wait", func(t *testing.T) {
		// A week to decide, eight steps: a turn may read a result written
		// days before.
		keep := ToolResultsRetention(7*day, 8)
		assert.GreaterOrEqual(t, keep, 8*7*day, "each step may wait for decisions once")
		s := open(t, Retention{ToolResults: keep})
		require.NoError(t, s.SaveToolResult(ctx, "sess", "turn-long", "c1", "approved long ago", false))
		require.NoError(t, s.SaveShown(ctx, "sess", "turn-long", `{"mode":"preview"}`))
		backdate(t, s, "tool_results", "created_at", 72*time.Hour)
		backdate(t, s, "stream_shown", "updated_at", 72*time.Hour)
		// Any later write prunes: another turn's result, another's stream.
		require.NoError(t, s.SaveToolResult(ctx, "other", "turn-x", "c1", "new", false))
		require.NoError(t, s.SaveShown(ctx, "other", "turn-x", `{"mode":"preview"}`))
		got, err := s.ToolResults(ctx, "sess", "turn-long")
		require.NoError(t, err)
		assert.Equal(t, map[string]ToolResult{"c1": {Output: "approved long ago"}}, got, "a result 72 h old is still read by its turn")
		shown, err := s.Shown(ctx, "sess", "turn-long")
		require.NoError(t, err)
		assert.NotEmpty(t, shown)

		backdate(t, s, "tool_results", "created_at", keep+time.Hour)
		backdate(t, s, "stream_shown", "updated_at", keep+time.Hour)
		require.NoError(t, s.SaveToolResult(ctx, "other", "turn-y", "c1", "newer", false))
		require.NoError(t, s.SaveShown(ctx, "other", "turn-y", `{"mode":"preview"}`))
		assert.Equal(t, 1, count(t, s, "tool_results"), "past its retention every result goes, but the one just written")
		assert.Equal(t, 1, count(t, s, "stream_shown"))
	})

	t.Run("the tool results' retention is never below 48 h", func(t *testing.T) {
		assert.Equal(t, toolResultsMargin+time.Minute, ToolResultsRetention(time.Minute, 1))
		assert.GreaterOrEqual(t, ToolResultsRetention(0, 0), 48*time.Hour)
		assert.GreaterOrEqual(t, DefaultRetention().ToolResults, ToolResultsRetention(24*time.Hour, 8), "the default fits the default settings")
	})

	t.Run("the delivery ledger keeps its retention", func(t *testing.T) {
		s := open(t, Retention{Deliveries: 30 * day})
		require.NoError(t, s.MapMessage(ctx, "sess", "old/0", "1"))
		backdate(t, s, "message_ids", "created_at", 31*day)
		require.NoError(t, s.MapMessage(ctx, "sess", "recent/0", "2"))
		backdate(t, s, "message_ids", "created_at", 29*day, "internal_id = ?", "recent/0")
		require.NoError(t, s.MapMessage(ctx, "sess", "new/0", "3"))
		_, found, err := s.PlatformID(ctx, "sess", "old/0")
		require.NoError(t, err)
		assert.False(t, found, "older than the retention: pruned by the next write")
		for _, internal := range []string{"recent/0", "new/0"} {
			_, found, err := s.PlatformID(ctx, "sess", internal)
			require.NoError(t, err)
			assert.True(t, found, internal)
		}
	})

	t.Run("feedback events keep their retention", func(t *testing.T) {
		s := open(t, Retention{Feedback: 90 * day})
		now := time.Now()
		for i, at := range []time.Time{now.Add(-91 * day), now.Add(-89 * day), now} {
			require.NoError(t, s.AddFeedback(ctx, Feedback{EventID: fmt.Sprint("u", i), SessionID: "sess", MessageID: "m", SenderID: "bob", Emoji: "👍", CreatedAt: at}))
		}
		got, err := s.Feedbacks(ctx, "sess")
		require.NoError(t, err)
		var ids []string
		for _, f := range got {
			ids = append(ids, f.EventID)
		}
		assert.Equal(t, []string{"u1", "u2"}, ids, "the 91-day-old reaction is pruned")
	})

	t.Run("an abandoned transcript is deleted its retention after it was left", func(t *testing.T) {
		s := open(t, Retention{Transcripts: 90 * day})
		long := time.Now().Add(-200 * day)
		entry, err := s.SessionEntry(ctx, "sess")
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, entry.TranscriptID, []Message{{Key: "t1/user", Role: "user", Body: "old", CreatedAt: long}}))
		current, err := s.StartTranscript(ctx, "sess", "t2") // /new
		require.NoError(t, err)
		require.NoError(t, s.Append(ctx, current, []Message{{Key: "t2/user", Role: "user", Body: "new", CreatedAt: time.Now()}}))
		left, err := s.Recent(ctx, entry.TranscriptID, 10)
		require.NoError(t, err)
		assert.Len(t, left, 1, "just abandoned, however old its messages: kept")

		backdate(t, s, "abandoned_transcripts", "abandoned_at", 91*day)
		require.NoError(t, s.Append(ctx, current, []Message{{Key: "t3/user", Role: "user", Body: "again", CreatedAt: time.Now()}}))
		left, err = s.Recent(ctx, entry.TranscriptID, 10)
		require.NoError(t, err)
		assert.Empty(t, left, "abandoned 91 days ago: deleted by the next write")
		assert.Equal(t, 0, count(t, s, "abandoned_transcripts"))
		kept, err := s.Recent(ctx, current, 10)
		require.NoError(t, err)
		assert.Len(t, kept, 2, "the current transcript stays")

		// A transcript written before the session points at it (a
		// compaction under way) is no one's yet, and not abandoned.
		require.NoError(t, s.Append(ctx, "sess#compact-k", []Message{{Key: "c/user", Role: "user", Body: "summary", CreatedAt: long}}))
		require.NoError(t, s.Append(ctx, current, []Message{{Key: "t4/user", Role: "user", Body: "more", CreatedAt: time.Now()}}))
		pending, err := s.Recent(ctx, "sess#compact-k", 10)
		require.NoError(t, err)
		assert.Len(t, pending, 1)

		// Starting the same transcript again (a retried activity) abandons
		// nothing.
		again, err := s.StartTranscript(ctx, "sess", "t2")
		require.NoError(t, err)
		assert.Equal(t, current, again)
		assert.Equal(t, 0, count(t, s, "abandoned_transcripts"))
	})

	t.Run("a current transcript keeps what a prompt reads, however old", func(t *testing.T) {
		s := open(t, Retention{Transcripts: 90 * day})
		long := time.Now().Add(-100 * day)
		var old []Message
		for i := range CurrentTranscriptKept + 50 {
			old = append(old, Message{Key: fmt.Sprint("old/", i), Role: "user", Body: "x", CreatedAt: long})
		}
		require.NoError(t, s.Append(ctx, "tr", old))
		require.NoError(t, s.Append(ctx, "tr", []Message{{Key: "new", Role: "user", Body: "y", CreatedAt: time.Now()}}))
		all, err := s.Recent(ctx, "tr", 10*CurrentTranscriptKept)
		require.NoError(t, err)
		require.Equal(t, CurrentTranscriptKept, len(all), "older than the retention, beyond the newest %d: pruned", CurrentTranscriptKept)
		require.NoError(t, s.Append(ctx, "tr", []Message{{Key: "new", Role: "user", Body: "y", CreatedAt: time.Now()}}), "a repeated write")
		again, err := s.Recent(ctx, "tr", 10*CurrentTranscriptKept)
		require.NoError(t, err)
		assert.Equal(t, all, again, "a message already there takes no number: nothing more is trimmed")
		assert.Equal(t, "old/51", all[0].Key)
		assert.Equal(t, "new", all[len(all)-1].Key)
	})

	t.Run("unused claim codes go once the agent has an owner", func(t *testing.T) {
		s := open(t, Retention{})
		code, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		_, err = s.NewClaimCode(ctx, time.Hour) // another worker's start
		require.NoError(t, err)
		ok, err := s.Claim(ctx, code, "webchat:alice")
		require.NoError(t, err)
		require.True(t, ok)
		assert.Equal(t, 1, count(t, s, "claim_codes"), "the spent code stays (a repeated claim answers from it)")
		ok, err = s.Claim(ctx, code, "webchat:alice")
		require.NoError(t, err)
		assert.True(t, ok)
	})
}

// backdate makes rows of table (all, or those where says) d old.
func backdate(t *testing.T, s *Store, table, column string, d time.Duration, where ...any) {
	t.Helper()
	query := fmt.Sprintf(`UPDATE %s SET %s = ?`, table, column)
	args := []any{time.Now().UTC().Add(-d)}
	if len(where) > 0 {
		query += " WHERE " + where[0].(string)
		args = append(args, where[1:]...)
	}
	_, err := s.db.Exec(s.q(query), args...)
	require.NoError(t, err)
}

func count(t *testing.T, s *Store, table string) int {
	t.Helper()
	var n int
	require.NoError(t, s.db.QueryRow(`SELECT COUNT(*) FROM `+table).Scan(&n))
	return n
}
