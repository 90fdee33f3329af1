package activities

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// recordingModel answers "reply N" and keeps every prompt it was given.
type recordingModel struct {
	mu      sync.Mutex
	prompts []models.Prompt
}

func (*recordingModel) Name() string { return "test/recording" }

func (m *recordingModel) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.prompts = append(m.prompts, p)
	return models.Completion{Text: "reply " + string(rune('0'+len(m.prompts)))}, nil
}

func TestTurnsRememberTheConversationWithinTheBudget(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	model := &recordingModel{}
	acts := &Activities{
		Models: only{model}, Store: db, SystemPrompt: "You are Ada.", ContextTokens: 8000,
		Outbound: map[string]adapters.Outbound{"webchat": &fakeOutbound{}}, Logger: slog.Default(),
	}
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	turn := func(id, text string, minutes int, fresh bool) models.Prompt {
		req := pipeline.TurnRequest{Session: session, TurnID: id, Model: "test/recording", Text: text, NewTranscript: fresh,
			Messages: []pipeline.TurnMessage{{MessageID: id, SenderID: "alice", Text: text, At: at.Add(time.Duration(minutes) * time.Minute)}}}
		_, err := newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
		require.NoError(t, err)
		return model.prompts[len(model.prompts)-1]
	}

	first := turn("t1", "hello", 0, false)
	assert.True(t, strings.HasPrefix(first.System, "You are Ada.\n\nYou are replying on webchat, in chat room"))
	assert.Equal(t, []models.Message{{Role: "user", Text: "[webchat Sat 2026-11-21 12:00 UTC] hello"}}, first.Messages)

	second := turn("t2", "and now?", 3, false)
	assert.Equal(t, []models.Message{
		{Role: "user", Text: "[webchat Sat 2026-11-21 12:00 UTC] hello"},
		{Role: "assistant", Text: "reply 1"},
		{Role: "user", Text: "[webchat +3m Sat 2026-11-21 12:03 UTC] and now?"},
	}, second.Messages, "the transcript comes first")

	// A repeated attempt of the same turn writes the transcript once.
	turn("t2", "and now?", 3, false)
	third := turn("t3", "third", 5, false)
	assert.Len(t, third.Messages, 5, "t1 and t2 once each, then the new message")

	fresh := turn("t4", "start over", 6, true)
	assert.Len(t, fresh.Messages, 1, "a new transcript starts empty")

	acts.ContextTokens = 256
	long := strings.Repeat("word ", 300)
	turn("t5", long, 7, false)
	small := turn("t6", "short", 8, false)
	assert.Len(t, small.Messages, 1, "what does not fit the budget is left out, oldest first")
}
