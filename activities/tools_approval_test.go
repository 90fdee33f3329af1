package activities

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// A call the model made while the asking worker did not know the tool
// (its MCP server was down, its list stale) was declared as needing no
// approval, and the session ran it at once. The worker that runs it knows
// the tool needs approval: it refuses, and the tool is never reached. The
// same call asked for, and approved, runs.
func TestACallThatNeedsApprovalRunsOnlyIfItWasAskedFor(t *testing.T) {
	srv, seen := toolServer(t)
	tools, err := LoadTools(writeTools(t, []ToolDef{{Name: "pay", URL: srv.URL + "/pay", Method: "post", RequiresApproval: true}}))
	require.NoError(t, err)
	acts := &Activities{Tools: tools, Logger: slog.Default()}
	env := newActivityEnv(acts)

	unasked := pipeline.ToolCall{ID: "c1", Name: "pay", Arguments: `{"to":"mallory"}`}
	v, err := env.ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: unasked})
	require.NoError(t, err)
	var res pipeline.ToolResult
	require.NoError(t, v.Get(&res))
	assert.True(t, res.IsError, "refused")
	assert.Contains(t, res.Output, "needs a person's approval")
	assert.Empty(t, seen(), "the tool was never reached")

	approved := unasked
	approved.ID, approved.RequiresApproval = "c2", true
	v, err = newActivityEnv(acts).ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: approved})
	require.NoError(t, err)
	var ran pipeline.ToolResult
	require.NoError(t, v.Get(&ran))
	assert.False(t, ran.IsError, ran.Output)
	assert.Len(t, seen(), 1, "the approved call ran")
}
