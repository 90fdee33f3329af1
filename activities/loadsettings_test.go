package activities

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// entryCountingStore counts the calls that make a session's entry.
type entryCountingStore struct {
	*store.Store
	made int
}

func (s *entryCountingStore) SessionEntry(ctx context.Context, sessionID string) (store.Entry, error) {
	s.made++
	return s.Store.SessionEntry(ctx, sessionID)
}

// Every session run loads its settings as it starts, a refused
// stranger's too: loading makes no entry in the store, so strangers
// cannot fill the sessions table. What a chat saved still loads.
func TestLoadingSettingsMakesNoSessionEntry(t *testing.T) {
	db := &entryCountingStore{Store: claimTestStore(t)}
	acts := &Activities{Store: db, Logger: slog.Default(), Settings: pipeline.Settings{Models: []string{"demo/echo"}}}
	stranger := pipeline.SessionKey{Channel: "webchat", Chat: "stranger"}
	_, err := acts.LoadSettings(context.Background(), stranger)
	require.NoError(t, err)
	assert.Zero(t, db.made, "no entry made")

	require.NoError(t, acts.SaveSessionSettings(context.Background(), stranger, pipeline.SessionSettings{ModelOverride: "openai/x"}))
	got, err := acts.LoadSettings(context.Background(), stranger)
	require.NoError(t, err)
	assert.Equal(t, "openai/x", got.Saved.ModelOverride)
}
