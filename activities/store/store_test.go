package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The same suite runs on both databases.
func TestStoreOnSQLite(t *testing.T) {
	runSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "nested", "store.db") })
}

// defaultTestPostgres is where the PostgreSQL suites run unless
// REPLYFLOW_TEST_POSTGRES_DSN says otherwise; cmd/internal/prereqs/test-prereqs.sh
// checks the same address before `make test`.
const defaultTestPostgres = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// postgresBase is the PostgreSQL the suites make their schemas and
// databases on. They run unless REPLYFLOW_TEST_POSTGRES=off asks to skip
// them, and then they say so.
func postgresBase(t *testing.T) string {
	if os.Getenv("REPLYFLOW_TEST_POSTGRES") == "off" {
		t.Skip("SKIPPED: the PostgreSQL store suites, because REPLYFLOW_TEST_POSTGRES=off; the store is not tested on PostgreSQL in this run")
	}
	if dsn := os.Getenv("REPLYFLOW_TEST_POSTGRES_DSN"); dsn != "" {
		return dsn
	}
	return defaultTestPostgres
}

func TestStoreOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	runSuite(t, func(t *testing.T) string {
		admin, err := sql.Open("pgx", base)
		require.NoError(t, err)
		defer admin.Close()
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		schema := "replyflow_test_" + hex.EncodeToString(b)
		_, err = admin.Exec("CREATE SCHEMA " + schema)
		require.NoError(t, err, "the store tests need PostgreSQL at %s (set REPLYFLOW_TEST_POSTGRES_DSN, or REPLYFLOW_TEST_POSTGRES=off to skip them)", base)
		t.Cleanup(func() {
			if admin, err := sql.Open("pgx", base); err == nil {
				_, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE")
				admin.Close()
			}
		})
		sep := "?"
		if strings.Contains(base, "?") {
			sep = "&"
		}
		return base + sep + "search_path=" + schema
	})
}

func runSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	open := func(t *testing.T) (*Store, string) {
		d := dsn(t)
		s, err := Open(ctx, d)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		return s, d
	}

	t.Run("free text with a NUL is kept without it, on either store", func(t *testing.T) {
		s, _ := open(t)
		require.NoError(t, s.Append(ctx, "session:webchat:nul#1", []Message{
			{Key: "t1/user", Role: "user", Sender: "al\x00ice", Body: "a\x00b", CreatedAt: time.Now()},
		}))
		got, err := s.Recent(ctx, "session:webchat:nul#1", 10)
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.Equal(t, "ab", got[0].Body)
		assert.Equal(t, "alice", got[0].Sender)
		require.NoError(t, s.SaveToolResult(ctx, "session:webchat:nul", "t1", "c1", "out\x00put", false))
	})

	t.Run("what a stream showed is kept per turn, the newest write winning", func(t *testing.T) {
		s, _ := open(t)
		got, err := s.Shown(ctx, "session:webchat:a", "t1")
		require.NoError(t, err)
		assert.Equal(t, "", got, "nothing recorded yet")
		require.NoError(t, s.SaveShown(ctx, "session:webchat:a", "t1", `{"mode":"blocks","blocks":["b1"]}`))
		require.NoError(t, s.SaveShown(ctx, "session:webchat:a", "t1", `{"mode":"blocks","blocks":["b1","b2"]}`))
		require.NoError(t, s.SaveShown(ctx, "session:webchat:a", "t2", `{"mode":"preview"}`))
		got, err = s.Shown(ctx, "session:webchat:a", "t1")
		require.NoError(t, err)
		assert.Equal(t, `{"mode":"blocks","blocks":["b1","b2"]}`, got)
	})

	t.Run("session entries keep settings across a new transcript", func(t *testing.T) {
		s, _ := open(t)
		e, err := s.SessionEntry(ctx, "session:webchat:a")
		require.NoError(t, err)
		assert.Equal(t, "session:webchat:a#1", e.TranscriptID)
		e.ModelOverride, e.QueueJSON = "anthropic/x", `{"mode":"collect"}`
		e.ThinkLevel, e.Verbose, e.UsageMode, e.Muted = "high", true, "full", true
		require.NoError(t, s.SaveSettings(ctx, e))
		id, err := s.StartTranscript(ctx, "session:webchat:a", "turn-7")
		require.NoError(t, err)
		again, err := s.StartTranscript(ctx, "session:webchat:a", "turn-7")
		require.NoError(t, err)
		assert.Equal(t, id, again, "idempotent by its key")
		e, err = s.SessionEntry(ctx, "session:webchat:a")
		require.NoError(t, err)
		assert.Equal(t, id, e.TranscriptID)
		assert.Equal(t, "anthropic/x", e.ModelOverride)
		assert.Equal(t, `{"mode":"collect"}`, e.QueueJSON)
		assert.Equal(t, "high", e.ThinkLevel)
		assert.True(t, e.Verbose)
		assert.Equal(t, "full", e.UsageMode)
		assert.True(t, e.Muted, "the chat settings (/think, /verbose, /send) outlive a workflow run too")
	})

	t.Run("transcripts are idempotent and ordered", func(t *testing.T) {
		s, _ := open(t)
		at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
		turn1 := []Message{{Key: "t1/user", Role: "user", Sender: "alice", Body: "hi", CreatedAt: at}, {Key: "t1/assistant", Role: "assistant", Body: "hello", CreatedAt: at}}
		require.NoError(t, s.Append(ctx, "tr", turn1))
		require.NoError(t, s.Append(ctx, "tr", turn1), "an activity that runs twice writes once")
		require.NoError(t, s.Append(ctx, "tr", []Message{{Key: "t2/user", Role: "user", Body: "again", CreatedAt: at}}))
		all, err := s.Recent(ctx, "tr", 10)
		require.NoError(t, err)
		var keys []string
		for _, m := range all {
			keys = append(keys, m.Key)
		}
		assert.Equal(t, []string{"t1/user", "t1/assistant", "t2/user"}, keys)
		last, err := s.Recent(ctx, "tr", 2)
		require.NoError(t, err)
		assert.Equal(t, "t1/assistant", last[0].Key, "the window is the most recent, oldest first")
		assert.Equal(t, at, last[0].CreatedAt.UTC())
		other, err := s.Recent(ctx, "other", 10)
		require.NoError(t, err)
		assert.Empty(t, other)
	})

	t.Run("message ID map both ways", func(t *testing.T) {
		s, _ := open(t)
		require.NoError(t, s.MapMessage(ctx, "sess", "turn1/0", "4711"))
		require.NoError(t, s.MapMessage(ctx, "sess", "turn1/0", "9999"), "the first mapping stays")
		p, ok, err := s.PlatformID(ctx, "sess", "turn1/0")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "4711", p)
		i, ok, err := s.InternalID(ctx, "sess", "4711")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "turn1/0", i)
		_, ok, err = s.InternalID(ctx, "sess", "1")
		require.NoError(t, err)
		assert.False(t, ok)
	})

	t.Run("the delivery ledger gives one claim on a chunk at a time", func(t *testing.T) {
		s, _ := open(t)
		later := time.Now().Add(time.Minute)
		id, held, err := s.ClaimSend(ctx, "sess", "t1/0", later)
		require.NoError(t, err)
		assert.True(t, id == "" && held.IsZero(), "the first asker has the claim")
		_, found, err := s.PlatformID(ctx, "sess", "t1/0")
		require.NoError(t, err)
		assert.False(t, found, "a claim is no sent message")

		id, held, err = s.ClaimSend(ctx, "sess", "t1/0", later.Add(time.Hour))
		require.NoError(t, err)
		assert.Empty(t, id)
		assert.WithinDuration(t, later, held, time.Second, "the second is told how long the first's claim holds")

		require.NoError(t, s.MapMessage(ctx, "sess", "t1/0", "4711"), "the first records what it sent")
		id, held, err = s.ClaimSend(ctx, "sess", "t1/0", later)
		require.NoError(t, err)
		assert.Equal(t, "4711", id, "then every asker learns it was sent")
		assert.True(t, held.IsZero())
		require.NoError(t, s.ReleaseSend(ctx, "sess", "t1/0"))
		pid, found, err := s.PlatformID(ctx, "sess", "t1/0")
		require.NoError(t, err)
		assert.Equal(t, "4711", pid, "a release takes back a claim only, never a record")
		assert.True(t, found)

		// A claim past its time (its attempt was cut off) is taken over.
		_, _, err = s.ClaimSend(ctx, "sess", "t2/0", time.Now().Add(-time.Second))
		require.NoError(t, err)
		id, held, err = s.ClaimSend(ctx, "sess", "t2/0", later)
		require.NoError(t, err)
		assert.True(t, id == "" && held.IsZero(), "taken over")
		_, held, err = s.ClaimSend(ctx, "sess", "t2/0", later)
		require.NoError(t, err)
		assert.False(t, held.IsZero(), "and held again")

		// A claim given back goes to the next asker at once.
		require.NoError(t, s.ReleaseSend(ctx, "sess", "t2/0"))
		id, held, err = s.ClaimSend(ctx, "sess", "t2/0", later)
		require.NoError(t, err)
		assert.True(t, id == "" && held.IsZero())
	})

	t.Run("two attempts that claim a chunk at once get one claim between them", func(t *testing.T) {
		s, _ := open(t)
		for round := range 20 {
			key := fmt.Sprintf("t%d/0", round)
			claimed := make(chan bool, 2)
			for range 2 {
				go func() {
					id, held, err := s.ClaimSend(ctx, "sess", key, time.Now().Add(time.Minute))
					claimed <- err == nil && id == "" && held.IsZero()
				}()
			}
			a, b := <-claimed, <-claimed
			assert.True(t, a != b, "round %d: exactly one claims (%v, %v)", round, a, b)
		}
	})

	t.Run("reading a session's settings makes no entry", func(t *testing.T) {
		s, _ := open(t)
		count := func() int {
			var n int
			require.NoError(t, s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sessions`).Scan(&n))
			return n
		}
		e, err := s.SavedSettings(ctx, "stranger")
		require.NoError(t, err)
		assert.Equal(t, Entry{SessionID: "stranger", TranscriptID: "stranger#1"}, e, "the defaults and the first transcript")
		assert.Zero(t, count(), "a refused stranger's session leaves no row")

		e.ModelOverride = "openai/x"
		require.NoError(t, s.SaveSettings(ctx, e))
		got, err := s.SavedSettings(ctx, "stranger")
		require.NoError(t, err)
		assert.Equal(t, "openai/x", got.ModelOverride, "what was kept reads back")
		assert.Equal(t, "stranger#1", got.TranscriptID)
		assert.Equal(t, 1, count())
	})

	t.Run("feedback once per event", func(t *testing.T) {
		s, _ := open(t)
		f := Feedback{EventID: "u1", SessionID: "sess", MessageID: "telegram:1:55", Unresolved: true, SenderID: "bob", Emoji: "👍", CreatedAt: time.Now()}
		require.NoError(t, s.AddFeedback(ctx, f))
		require.NoError(t, s.AddFeedback(ctx, f))
		got, err := s.Feedbacks(ctx, "sess")
		require.NoError(t, err)
		require.Len(t, got, 1)
		assert.True(t, got[0].Unresolved)
		assert.Equal(t, "👍", got[0].Emoji)
	})

	t.Run("tool results once per call, by turn", func(t *testing.T) {
		s, _ := open(t)
		require.NoError(t, s.SaveToolResult(ctx, "sess", "turn-1", "c1", "sunny", false))
		require.NoError(t, s.SaveToolResult(ctx, "sess", "turn-1", "c1", "changed on a retry", false), "a second write changes nothing")
		require.NoError(t, s.SaveToolResult(ctx, "sess", "turn-1", "c2", "timeout", true))
		require.NoError(t, s.SaveToolResult(ctx, "sess", "turn-2", "c1", "other turn", false))
		got, err := s.ToolResults(ctx, "sess", "turn-1")
		require.NoError(t, err)
		assert.Equal(t, map[string]ToolResult{"c1": {Output: "sunny"}, "c2": {Output: "timeout", IsError: true}}, got)
		none, err := s.ToolResults(ctx, "other", "turn-1")
		require.NoError(t, err)
		assert.Empty(t, none)
	})

	t.Run("claim codes make one owner each", func(t *testing.T) {
		s, _ := open(t)
		code, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		ok, err := s.Claim(ctx, code, "webchat:alice")
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = s.Claim(ctx, code, "webchat:alice")
		require.NoError(t, err)
		assert.True(t, ok, "a repeated activity claims again harmlessly")
		ok, err = s.Claim(ctx, code, "webchat:mallory")
		require.NoError(t, err)
		assert.False(t, ok, "a used code is spent")
		ok, err = s.Claim(ctx, "claim-nope", "webchat:bob")
		require.NoError(t, err)
		assert.False(t, ok)
		late, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		ok, err = s.Claim(ctx, late, "webchat:bob")
		require.NoError(t, err)
		assert.False(t, ok, "once the agent has an owner, codes claim nothing")
		owners, err := s.Owners(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"webchat:alice"}, owners)
	})

	t.Run("a claim code expires, works once, and dies when owners are configured", func(t *testing.T) {
		s, _ := open(t)
		expired, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		backdate(t, s, "claim_codes", "expires_at", time.Second, "code = ?", expired)
		ok, err := s.Claim(ctx, expired, "webchat:alice")
		require.NoError(t, err)
		assert.False(t, ok, "an expired code claims nothing")

		revoked, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		require.NoError(t, s.RevokeClaimCodes(ctx), "a start with REPLYFLOW_OWNERS set")
		ok, err = s.Claim(ctx, revoked, "webchat:mallory")
		require.NoError(t, err)
		assert.False(t, ok, "a code printed before owners were configured claims nothing after")

		code, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		ok, err = s.Claim(ctx, code, "webchat:alice")
		require.NoError(t, err)
		assert.True(t, ok)
		ok, err = s.Claim(ctx, code, "webchat:mallory")
		require.NoError(t, err)
		assert.False(t, ok, "a code works once")
		owners, err := s.Owners(ctx)
		require.NoError(t, err)
		assert.Equal(t, []string{"webchat:alice"}, owners)
	})

	t.Run("a burnt claim code claims nothing, and a spent one stays spent", func(t *testing.T) {
		s, _ := open(t)
		burnt, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		kept, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		require.NoError(t, s.BurnClaimCode(ctx, burnt), "a bot sent it")
		require.NoError(t, s.BurnClaimCode(ctx, "claim-unknown"), "an unknown code is no error")
		ok, err := s.Claim(ctx, burnt, "webchat:alice")
		require.NoError(t, err)
		assert.False(t, ok, "a burnt code claims nothing")
		ok, err = s.Claim(ctx, kept, "webchat:alice")
		require.NoError(t, err)
		assert.True(t, ok, "burning one code leaves the others")
		require.NoError(t, s.BurnClaimCode(ctx, kept))
		ok, err = s.Claim(ctx, kept, "webchat:alice")
		require.NoError(t, err)
		assert.True(t, ok, "a spent code stays its claimer's (a repeated activity)")
	})

	t.Run("wrong claim guesses are limited per sender and in all", func(t *testing.T) {
		s, _ := open(t)
		code, err := s.NewClaimCode(ctx, time.Hour)
		require.NoError(t, err)
		guess := func(i int) string { return fmt.Sprintf("claim-%012x", i) }
		for i := range ClaimFailuresPerSender {
			ok, err := s.Claim(ctx, guess(i), "webchat:mallory")
			require.NoError(t, err)
			require.False(t, ok)
		}
		ok, err := s.Claim(ctx, code, "webchat:mallory")
		require.NoError(t, err)
		assert.False(t, ok, "a sender out of guesses is refused even the right code")

		for i := ClaimFailuresPerSender; i < ClaimFailuresTotal; i++ {
			ok, err := s.Claim(ctx, guess(i), fmt.Sprintf("webchat:sybil%d", i))
			require.NoError(t, err)
			require.False(t, ok)
		}
		ok, err = s.Claim(ctx, code, "webchat:alice")
		require.NoError(t, err)
		assert.False(t, ok, "with the guesses of the hour used up, even the right code waits")

		backdate(t, s, "claim_failures", "failed_at", ClaimFailureWindow+time.Minute)
		ok, err = s.Claim(ctx, code, "webchat:alice")
		require.NoError(t, err)
		assert.True(t, ok, "an hour later the right code works")
		assert.Equal(t, 0, count(t, s, "claim_failures"), "failures older than the window are pruned")
	})

	t.Run("reopening keeps the data and migrates once", func(t *testing.T) {
		d := dsn(t)
		s, err := Open(ctx, d)
		require.NoError(t, err)
		require.NoError(t, s.MapMessage(ctx, "sess", "a", "b"))
		s.Close()
		s, err = Open(ctx, d)
		require.NoError(t, err)
		defer s.Close()
		p, ok, err := s.PlatformID(ctx, "sess", "a")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "b", p)
	})
}
