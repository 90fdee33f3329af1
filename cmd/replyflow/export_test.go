package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
)

func TestExportCommandPrintsTheTranscript(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	db, err := store.Open(ctx, cfg.StoreDSN)
	require.NoError(t, err)
	entry, err := db.SessionEntry(ctx, "session:webchat:ex-1")
	require.NoError(t, err)
	at := time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)
	require.NoError(t, db.Append(ctx, entry.TranscriptID, []store.Message{
		{Key: "t1/user", Role: "user", Sender: "alice", Body: "hello", CreatedAt: at},
		{Key: "t1/assistant", Role: "assistant", Body: "hi there", CreatedAt: at},
	}))
	require.NoError(t, db.Close())

	var out strings.Builder
	require.NoError(t, exportCommand(ctx, cfg, []string{"webchat:ex-1"}, &out, at))
	assert.Equal(t, "# Conversation session:webchat:ex-1\n\nExported 2026-11-24 09:00 UTC · 2 message(s)\n"+
		"\n### alice · 2026-11-24 09:00 UTC\n\n> hello\n\n### assistant · 2026-11-24 09:00 UTC\n\n> hi there\n", out.String())

	file := filepath.Join(t.TempDir(), "t.md")
	out.Reset()
	require.NoError(t, exportCommand(ctx, cfg, []string{"--out", file, "session:webchat:ex-1"}, &out, at))
	assert.Equal(t, "Wrote 2 message(s) of session:webchat:ex-1 to "+file+".\n", out.String())
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Contains(t, string(data), "> hi there")

	assert.ErrorContains(t, exportCommand(ctx, cfg, []string{"webchat:nobody"}, &out, at), "has no messages")
	assert.ErrorContains(t, exportCommand(ctx, cfg, []string{"not a session!"}, &out, at), "is not a session")
	assert.ErrorContains(t, exportCommand(ctx, cfg, nil, &out, at), "usage: replyflow export")
}
