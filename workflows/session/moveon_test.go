package session

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// continuedParams is what a run handed to continue-as-new.
func continuedParams(t *testing.T, err error) Params {
	t.Helper()
	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &can, "the run continued as new")
	assert.Equal(t, WorkflowName, can.WorkflowType.Name, "into the live type")
	require.NotNil(t, can.Input)
	require.Len(t, can.Input.Payloads, 1)
	var next Params
	require.NoError(t, converter.GetDefaultDataConverter().FromPayload(can.Input.Payloads[0], &next))
	return next
}

var moveOn = workflows.MoveOnRequest{By: "ops", Reason: "retire the old release's state"}

// A run that began as a move from the retiring release reads that
// release's state on every replay; asked to move on, an idle one
// continues as new at once into a run that carries the state in this
// package's form and no longer names the retiring one.
func TestAnIdleMovedRunAskedToMoveOnContinuesAsNewWithoutTheRetiredState(t *testing.T) {
	env, w := newLoopEnv(t)
	old := &workflows.State{}
	old.ModelOverride, old.TurnSeq = "anthropic/b", 9
	old.ControlState.UsageMode = pipeline.UsageTokens
	start := env.Now()
	signalAt(env, time.Hour, workflows.SignalMoveOn, moveOn)
	env.ExecuteWorkflow(WorkflowName, Params{Session: loopSession, Retired: old})

	require.True(t, env.IsWorkflowCompleted())
	next := continuedParams(t, env.GetWorkflowError())
	assert.Equal(t, time.Hour, env.Now().Sub(start), "it moved on when asked, not when its idle TTL ran out")
	assert.Nil(t, next.Retired, "the next run reads no retiring state")
	require.NotNil(t, next.State)
	assert.Equal(t, loopSession, next.Session)
	assert.Equal(t, "anthropic/b", next.State.Turn.Models.ModelOverride, "the chat's /model moved with it")
	assert.Equal(t, 9, next.State.Turn.Seq, "turn IDs go on from the old run's")
	assert.Equal(t, pipeline.UsageTokens, next.State.Control.UsageMode, "the chat's /usage moved with it")
	assert.Equal(t, 1, next.State.Counters.Runs)
	assert.Empty(t, w.steps, "moving on asks no model")
}

// A run asked to move on while its turn waits for a person carries the
// waiting turn and the message queued behind it; the decision then comes
// to the next run, which runs the tool once and answers the queued
// message after it.
func TestARunAskedToMoveOnWhileItsTurnWaitsCarriesTheTurnAndItsQueue(t *testing.T) {
	env, w := newLoopEnv(t)
	w.agent = payAgent
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "pay bob"))
	signalAt(env, 30*time.Second, workflows.SignalInbound, inbound("m2", "alice", "hello"))
	signalAt(env, time.Minute, workflows.SignalMoveOn, moveOn)
	env.ExecuteWorkflow(WorkflowName, Params{Session: loopSession})

	next := continuedParams(t, env.GetWorkflowError())
	assert.Empty(t, w.toolCalls, "nothing runs before the decision")
	require.Len(t, w.texts(), 1, "only the proposal went out: %q", w.texts())
	require.NotNil(t, next.State.Turn.Active, "the waiting turn is carried")
	assert.True(t, next.State.Queue.Queued(), "the message behind it is carried")

	env2, w2 := newLoopEnv(t)
	env2.SetStartTime(env.Now())
	w2.agent = func(req pipeline.TurnRequest) pipeline.TurnResult {
		if strings.Contains(req.Text, "pay bob") {
			return payAgent(req)
		}
		return pipeline.TurnResult{Reply: "You said: " + req.Text, Model: req.Model}
	}
	signalAt(env2, time.Minute, workflows.SignalProposal, pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "web:boss"})
	env2.ExecuteWorkflow(WorkflowName, next)
	require.NoError(t, env2.GetWorkflowError())
	require.Len(t, w2.toolCalls, 1, "the approved tool runs once, in the next run")
	assert.Equal(t, []string{"paid: done", "You said: hello"}, w2.texts(), "the turn ends, then the queued message is answered")
}

// A silent turn (the model chose not to answer) ends with no reaction of
// the session's own: its activity cleared ✍️, and the message stays
// tracked as thinking. The run that continues as new leaves it behind,
// so the next run may go idle and complete, and tracks what it must.
func TestARunThatContinuesAsNewLeavesTheSilentTurnsMessagesBehind(t *testing.T) {
	env, w := newLoopEnv(t)
	w.agent = func(req pipeline.TurnRequest) pipeline.TurnResult { return pipeline.TurnResult{Model: req.Model} }
	signalAt(env, time.Second, workflows.SignalInbound, inbound("m1", "alice", "nothing to say to this"))
	signalAt(env, time.Minute, workflows.SignalMoveOn, moveOn)
	env.ExecuteWorkflow(WorkflowName, Params{Session: loopSession})

	next := continuedParams(t, env.GetWorkflowError())
	require.Len(t, w.steps, 1, "the turn ran")
	assert.Empty(t, w.texts(), "and said nothing")
	assert.Empty(t, next.State.Reactions.Reactions, "the next run tracks no reaction of it")

	env2, _ := newLoopEnv(t)
	env2.SetStartTime(env.Now())
	start := env2.Now()
	env2.ExecuteWorkflow(WorkflowName, next)
	require.True(t, env2.IsWorkflowCompleted())
	require.NoError(t, env2.GetWorkflowError(), "the next run idles out")
	assert.LessOrEqual(t, env2.Now().Sub(start), 24*time.Hour, "within its TTL")
}

func TestForgetStaleThinkingKeepsWhatATurnOrTheScheduleStillNeeds(t *testing.T) {
	at := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	s := ReactionsState{
		Reactions: []Reaction{
			{MessageID: "stale", State: pipeline.ReactionThinking},
			{MessageID: "active", State: pipeline.ReactionThinking},
			{MessageID: "shown", State: pipeline.ReactionThinking, Shown: true},
			{MessageID: "done", State: pipeline.ReactionDone, Shown: true, ClearAt: at},
			{MessageID: "retrying", State: pipeline.ReactionThinking, RetryAt: at},
			{MessageID: "queued", State: pipeline.ReactionThinking},
			{MessageID: "received", State: pipeline.ReactionReceived},
		},
		Changes: []pipeline.ReactionChange{{MessageID: "queued", State: pipeline.ReactionNone}},
	}
	assert.Equal(t, 1, s.ForgetStaleThinking([]msgRef{{ID: "active"}}))
	var left []string
	for _, r := range s.Reactions {
		left = append(left, r.MessageID)
	}
	assert.Equal(t, []string{"active", "shown", "done", "retrying", "queued", "received"}, left)
}
