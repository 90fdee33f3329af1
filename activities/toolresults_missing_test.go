package activities

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// A step whose earlier tool result is gone from the store fails as what it
// is, ToolResultsMissing, non-retryable and naming the session, the turn
// and the call: no model is asked, and no model is blamed (a model error
// type would send the turn through the fallback chain to fail on each).
func TestAMissingToolResultIsToolResultsMissing(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.SaveToolResult(context.Background(), session.WorkflowID(), "turn-1", "c1", "sunny", false))
	model := &recordingModel{}
	acts := &Activities{Store: db, Models: only{model}, Logger: slog.Default(),
		Settings: pipeline.Settings{ProposalTTL: pipeline.Duration(72 * time.Hour), MaxSteps: 4},
		Outbound: map[string]adapters.Outbound{"webchat": &fakeOutbound{}}}

	calls := []pipeline.ToolCall{{ID: "c1", Name: "weather"}, {ID: "c2", Name: "deploy"}}
	round := pipeline.ToolRound{Calls: calls, Results: []pipeline.ToolResult{
		{CallID: "c1", Name: "weather", Stored: true}, {CallID: "c2", Name: "deploy", Stored: true},
	}}
	req := pipeline.TurnRequest{Session: session, TurnID: "turn-1", Step: 1, Model: "test/recording", Text: "go",
		Messages: []pipeline.TurnMessage{{MessageID: "m1", SenderID: "alice", Text: "go", At: time.Now()}}, Rounds: []pipeline.ToolRound{round}}
	_, err = newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.True(t, errors.As(err, &app), "an ApplicationError: %v", err)
	assert.Equal(t, pipeline.ErrToolResultsMissing, app.Type())
	assert.True(t, app.NonRetryable(), "waiting brings a deleted result back no more than another model does")
	for _, want := range []string{session.WorkflowID(), "turn-1", "c2", "deploy", "REPLYFLOW_PROPOSAL_TTL"} {
		assert.Contains(t, app.Error(), want)
	}
	assert.NotContains(t, app.Error(), "c1 ", "only the missing call is named")
	assert.Empty(t, model.prompts, "no model was asked")

	// A worker without a store cannot read any result: the same type.
	acts.Store = nil
	_, err = newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	require.True(t, errors.As(err, &app), "an ApplicationError: %v", err)
	assert.Equal(t, pipeline.ErrToolResultsMissing, app.Type())
	assert.Contains(t, app.Error(), "REPLYFLOW_STORE_DSN")
}
