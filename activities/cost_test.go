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

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// A stored tool result reaches the next model step from the store: the
// step's request carries only the reference (runs with changeCost).
func TestAStoredToolResultReachesTheNextStep(t *testing.T) {
	srv, _ := toolServer(t)
	tools, err := LoadTools(writeTools(t, []ToolDef{{Name: "search", URL: srv.URL + "/search", Method: "get"}}))
	require.NoError(t, err)
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	model := &recordingModel{}
	acts := &Activities{Tools: tools, Store: db, Models: only{model}, Logger: slog.Default(),
		Outbound: map[string]adapters.Outbound{"webchat": &fakeOutbound{}}}
	env := newActivityEnv(acts)

	call := pipeline.ToolCall{ID: "c1", Name: "search", Arguments: `{"q":"temporal"}`}
	v, err := env.ExecuteActivity(acts.RunTool, pipeline.ToolInvocation{Session: session, TurnID: "turn-1", Call: declared(acts, call), StoreResult: true})
	require.NoError(t, err)
	var res pipeline.ToolResult
	require.NoError(t, v.Get(&res))
	require.True(t, res.Stored, "saved before the activity completed")
	require.NotEmpty(t, res.Output, "and still returned: the session shows it in tool lines")

	round := pipeline.ToolRound{Text: "searching", Calls: []pipeline.ToolCall{call}, Results: []pipeline.ToolResult{res}}.References()
	require.Empty(t, round.Results[0].Output)
	req := pipeline.TurnRequest{Session: session, TurnID: "turn-1", Step: 1, Model: "test/recording", Text: "find it",
		Messages: []pipeline.TurnMessage{{MessageID: "m1", SenderID: "alice", Text: "find it", At: time.Now()}}, Rounds: []pipeline.ToolRound{round}}
	_, err = newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	require.NoError(t, err)
	prompt := model.prompts[len(model.prompts)-1]
	last := prompt.Messages[len(prompt.Messages)-1]
	assert.Equal(t, "tool", last.Role)
	assert.Equal(t, res.Output, last.Text, "the model reads the output from the store")

	// A reference the store does not have fails the attempt, rather than
	// showing the model an empty result.
	req.TurnID = "turn-unknown"
	_, err = newActivityEnv(acts).ExecuteActivity(acts.AgentTurn, req)
	assert.ErrorContains(t, err, "not in the store")
}

// slowReactions paces reactions as a platform that rate-limits them does.
type slowReactions struct {
	fakeOutbound
	each time.Duration
}

func (s *slowReactions) SetReaction(ctx context.Context, r pipeline.ReactionChange) error {
	select {
	case <-time.After(s.each):
		return s.fakeOutbound.SetReaction(ctx, r)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// A delivery sets the reactions it carries once its chunk is out, within
// a bound of its own: the chunk is delivered whatever the reactions do,
// and those not set in time are named for the session to set.
func TestADeliverySetsItsReactionsWithinABudget(t *testing.T) {
	out := &slowReactions{each: 900 * time.Millisecond}
	acts := &Activities{Logger: slog.Default(), Outbound: map[string]adapters.Outbound{"webchat": out}}
	var react []pipeline.ReactionChange
	for _, id := range []string{"m1", "m2", "m3", "m4", "m5"} {
		react = append(react, pipeline.ReactionChange{Session: session, MessageID: id, State: pipeline.ReactionDone})
	}
	started := time.Now()
	got, err := acts.Deliver(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: "k", Text: "hello", Total: 1, ThenReact: react})
	require.NoError(t, err)
	assert.Less(t, time.Since(started), thenReactBudget+time.Second, "bounded by the budget, not by five slow reactions")
	assert.Equal(t, "p-1", got.PlatformMessageID)
	require.Len(t, out.sent, 1)
	// At most two fit in the 2 s at 0.9 s each; the rest are the session's.
	set := len(out.reactions)
	assert.LessOrEqual(t, set, 2)
	assert.Equal(t, 5-set, len(got.ReactionsFailed))
	assert.Contains(t, got.ReactionsFailed, "m5")

	out.sendErr = errors.New("down")
	_, err = acts.Deliver(context.Background(), pipeline.Delivery{Session: session, IdempotencyKey: "k2", Text: "x", Total: 1, ThenReact: react})
	require.Error(t, err)
	assert.Len(t, out.reactions, set, "no reaction for a chunk that did not go out")
}
