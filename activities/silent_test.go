package activities

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// answering is a model that gives one completion.
type answering struct{ completion models.Completion }

func (answering) Name() string { return "test/answering" }

func (m answering) Complete(context.Context, models.Prompt) (models.Completion, error) {
	return m.completion, nil
}

func TestASilentTurnTakesTheReactionsOffItsMessages(t *testing.T) {
	turn := func(completion models.Completion) []pipeline.ReactionChange {
		out := &fakeOutbound{}
		acts := &Activities{Models: only{answering{completion}}, Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
		req := pipeline.TurnRequest{Session: session, TurnID: "t1", Model: "test/answering", Text: "hi all", ThreadID: "th",
			Messages: []pipeline.TurnMessage{{MessageID: "m1", SenderID: "alice"}, {MessageID: "m2", SenderID: "bob"}, {MessageID: "m1", SenderID: "alice"}}}
		_, err := newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
		require.NoError(t, err)
		return out.reacted()
	}
	cleared := []pipeline.ReactionChange{
		{Session: session, MessageID: "m1", ThreadID: "th", State: pipeline.ReactionNone},
		{Session: session, MessageID: "m2", ThreadID: "th", State: pipeline.ReactionNone},
	}
	assert.Equal(t, cleared, turn(models.Completion{Text: " no_reply "}), "NO_REPLY: each message cleared once")
	assert.Equal(t, cleared, turn(models.Completion{ToolCalls: []pipeline.ToolCall{{ID: "c1", Name: pipeline.SkipResponseTool}}}), "skip_response")
	assert.Empty(t, turn(models.Completion{Text: "hello"}), "an answer keeps its reactions for the session to finish")
	assert.Empty(t, turn(models.Completion{ToolCalls: []pipeline.ToolCall{{ID: "c1", Name: "search"}}}), "a tool step is not the end")
}
