package activities

import (
	"context"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

func TestFeedbackIsResolvedToTheInternalMessageOrKeptUnresolved(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	acts := &Activities{Store: db, Logger: slog.Default()}
	key := pipeline.SessionKey{Channel: "telegram", Account: "1000", Chat: "-100123"}
	internal := key.WorkflowID() + "/t1/0"
	require.NoError(t, db.MapMessage(ctx, key.WorkflowID(), internal, "41"))

	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	event := func(id, message string) pipeline.Feedback {
		return pipeline.Feedback{Channel: "telegram", Account: "1000", ChatID: "-100123", EventID: id, MessageID: message, SenderID: "11", Emoji: []string{"👍"}, At: at}
	}
	env := newActivityEnv(acts)
	_, err = env.ExecuteActivity(acts.RecordFeedback, event("tg-1000-1", "41"))
	require.NoError(t, err)
	_, err = env.ExecuteActivity(acts.RecordFeedback, event("tg-1000-1", "41"))
	require.NoError(t, err, "a redelivered event is stored once")
	_, err = env.ExecuteActivity(acts.RecordFeedback, event("tg-1000-2", "7"))
	require.NoError(t, err)

	got, err := db.Feedbacks(ctx, key.WorkflowID())
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, internal, got[0].MessageID)
	assert.False(t, got[0].Unresolved)
	assert.Equal(t, "👍", got[0].Emoji)
	assert.Equal(t, "telegram:-100123:7", got[1].MessageID)
	assert.True(t, got[1].Unresolved)
}
