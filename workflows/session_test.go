package workflows

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// fakePlatform stands in for the activities: it records every side effect
// with the simulated time at which it happened.
type fakePlatform struct {
	env *testsuite.TestWorkflowEnvironment

	mu        sync.Mutex
	reactions []reactionCall
	sent      []pipeline.Delivery
	turns     []pipeline.TurnRequest
	settings  pipeline.Settings
	failTurn  error
}

type reactionCall struct {
	MessageID string
	State     pipeline.ReactionState
	At        time.Duration
}

func testSettings() pipeline.Settings {
	return pipeline.Settings{
		Model: "demo/echo", ReactionClearDelay: pipeline.Duration(time.Minute), ErrorClearDelay: pipeline.Duration(10 * time.Minute),
		IdleTTL: pipeline.Duration(24 * time.Hour), ChunkLimit: 20, TurnTimeout: pipeline.Duration(time.Minute),
		TurnHeartbeatTimeout: pipeline.Duration(20 * time.Second), TurnAttempts: 2,
		DeliveryTimeout: pipeline.Duration(10 * time.Second), DeliveryAttempts: 3,
	}
}

var testStart = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

func newEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *fakePlatform) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(testStart)
	p := &fakePlatform{env: env, settings: testSettings()}
	env.RegisterWorkflowWithOptions(SessionWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, pipeline.SessionKey) (pipeline.Settings, error) {
		return p.settings, nil
	}, activity.RegisterOptions{Name: pipeline.ActivityLoadSettings})
	env.RegisterActivityWithOptions(p.agentTurn, activity.RegisterOptions{Name: pipeline.ActivityAgentTurn})
	env.RegisterActivityWithOptions(p.deliver, activity.RegisterOptions{Name: pipeline.ActivityDeliver})
	env.RegisterActivityWithOptions(p.setReaction, activity.RegisterOptions{Name: pipeline.ActivitySetReaction})
	t.Cleanup(func() { env.AssertExpectations(t) })
	return env, p
}

func (p *fakePlatform) elapsed() time.Duration { return p.env.Now().Sub(testStart) }

func (p *fakePlatform) agentTurn(_ context.Context, req pipeline.TurnRequest) (pipeline.TurnResult, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turns = append(p.turns, req)
	if p.failTurn != nil {
		return pipeline.TurnResult{}, p.failTurn
	}
	var texts []string
	for _, m := range req.Messages {
		texts = append(texts, m.Text)
	}
	return pipeline.TurnResult{Reply: "echo " + strings.Join(texts, " "), Model: "demo/echo"}, nil
}

func (p *fakePlatform) deliver(_ context.Context, d pipeline.Delivery) (pipeline.Delivered, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sent = append(p.sent, d)
	return pipeline.Delivered{PlatformMessageID: fmt.Sprintf("bot-%d", len(p.sent))}, nil
}

func (p *fakePlatform) setReaction(_ context.Context, r pipeline.ReactionChange) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reactions = append(p.reactions, reactionCall{MessageID: r.MessageID, State: r.State, At: p.elapsed()})
	return nil
}

func (p *fakePlatform) statesOf(messageID string) []pipeline.ReactionState {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []pipeline.ReactionState
	for _, r := range p.reactions {
		if r.MessageID == messageID {
			out = append(out, r.State)
		}
	}
	return out
}

func (p *fakePlatform) clearedAt(messageID string) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.reactions {
		if r.MessageID == messageID && r.State == pipeline.ReactionNone {
			return r.At, true
		}
	}
	return 0, false
}

var demoSession = pipeline.SessionKey{Channel: "webchat", Chat: "demo"}

func inbound(id, text string) pipeline.Inbound {
	return pipeline.Inbound{Channel: "webchat", ChatID: "demo", MessageID: id, SenderID: "alice", Text: text, ReceivedAt: testStart}
}

// queryStateAt queries the state at a simulated time; the snapshot is
// filled in once the workflow has run past it.
func queryStateAt(t *testing.T, env *testsuite.TestWorkflowEnvironment, at time.Duration) *Snapshot {
	snap := &Snapshot{}
	env.RegisterDelayedCallback(func() {
		v, err := env.QueryWorkflow(QueryState)
		require.NoError(t, err)
		require.NoError(t, v.Get(snap))
	}, at)
	return snap
}

func signalAt(env *testsuite.TestWorkflowEnvironment, at time.Duration, in pipeline.Inbound) {
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalInbound, in) }, at)
}

func TestSimpleTurnReactsRepliesAndClearsAfterDelay(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hello there"))
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})

	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError(), "an idle session completes cleanly after its TTL")
	assert.Equal(t, []pipeline.ReactionState{
		pipeline.ReactionReceived, pipeline.ReactionThinking, pipeline.ReactionDone, pipeline.ReactionNone,
	}, p.statesOf("m1"))
	at, ok := p.clearedAt("m1")
	require.True(t, ok)
	assert.Equal(t, time.Second+time.Minute, at, "✅ is cleared by a durable timer 60 s after the reply")

	require.Len(t, p.sent, 1)
	assert.Equal(t, "echo hello there", p.sent[0].Text)
	assert.Equal(t, "m1", p.sent[0].ReplyTo, "the reply anchors the user's message")
	assert.Contains(t, p.sent[0].IdempotencyKey, "session:webchat:demo/")
	assert.Equal(t, 24*time.Hour, env.Now().Sub(testStart)-at, "the idle TTL starts once the last reaction is cleared")
}

func TestRepeatedMessageIDIsProcessedOnce(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hi"))
	signalAt(env, 2*time.Second, inbound("m1", "hi"))
	signalAt(env, 3*time.Minute, inbound("m1", "hi"))
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})

	require.NoError(t, env.GetWorkflowError())
	assert.Len(t, p.turns, 1)
	assert.Len(t, p.sent, 1)
}

func TestQueuedMessagesGetOneTurnEachInOrder(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "first"))
	signalAt(env, time.Second, inbound("m2", "second"))
	signalAt(env, time.Second, inbound("m3", "third"))
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})

	require.NoError(t, env.GetWorkflowError())
	var texts []string
	for _, d := range p.sent {
		texts = append(texts, d.Text)
	}
	assert.Equal(t, []string{"echo first", "echo second", "echo third"}, texts)
	for _, id := range []string{"m1", "m2", "m3"} {
		states := p.statesOf(id)
		assert.Equal(t, pipeline.ReactionReceived, states[0], id)
		assert.Equal(t, pipeline.ReactionNone, states[len(states)-1], id)
	}
}

func TestLongReplyIsDeliveredAsOrderedChunksWithDistinctKeys(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "one two three four five six seven eight"))
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})

	require.NoError(t, env.GetWorkflowError())
	require.Greater(t, len(p.sent), 1)
	keys := map[string]bool{}
	var joined []string
	for i, d := range p.sent {
		assert.Equal(t, i, d.Index)
		assert.Equal(t, len(p.sent), d.Total)
		assert.LessOrEqual(t, len([]rune(d.Text)), 20)
		keys[d.IdempotencyKey] = true
		joined = append(joined, d.Text)
		if i > 0 {
			assert.Empty(t, d.ReplyTo, "only the first chunk anchors")
		}
	}
	assert.Len(t, keys, len(p.sent))
	assert.Equal(t, "echo one two three four five six seven eight", strings.Join(joined, " "))
}

func TestFailedTurnShowsErrorAndClearsItLater(t *testing.T) {
	env, p := newEnv(t)
	p.failTurn = temporal.NewNonRetryableApplicationError("model down", "ModelFailed", errors.New("boom"))
	signalAt(env, time.Second, inbound("m1", "hi"))
	snap := queryStateAt(t, env, 2*time.Minute)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})

	require.NoError(t, env.GetWorkflowError())
	assert.Empty(t, p.sent)
	assert.Equal(t, []pipeline.ReactionState{
		pipeline.ReactionReceived, pipeline.ReactionThinking, pipeline.ReactionError, pipeline.ReactionNone,
	}, p.statesOf("m1"))
	at, _ := p.clearedAt("m1")
	assert.Equal(t, time.Second+10*time.Minute, at, "❌ is cleared after the error clear delay")
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, "failed", snap.LastTurn.Outcome)
	assert.Contains(t, snap.LastTurn.Error, "ModelFailed")
}

func TestStateQueryDescribesThePendingClear(t *testing.T) {
	env, _ := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hi"))
	snap := queryStateAt(t, env, 30*time.Second)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})

	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, StatusIdle, snap.Status)
	assert.Equal(t, 1, snap.TurnSeq)
	require.Len(t, snap.Reactions, 1)
	assert.Equal(t, pipeline.ReactionDone, snap.Reactions[0].State)
	assert.Equal(t, testStart.Add(time.Second+time.Minute), snap.Reactions[0].ClearAt)
	require.Len(t, snap.Deliveries, 1)
	assert.Equal(t, "bot-1", snap.Deliveries[0].PlatformMessageID)
}

func TestContinueAsNewCarriesStateAndPendingClears(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hi"))
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 30*time.Second)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})

	var can *workflow.ContinueAsNewError
	require.ErrorAs(t, env.GetWorkflowError(), &can)
	assert.Equal(t, WorkflowName, can.WorkflowType.Name)
	// The run may only continue as new once it is quiet, so the ✅ had been
	// cleared before; the carried state still remembers m1.
	assert.Equal(t, []pipeline.ReactionState{
		pipeline.ReactionReceived, pipeline.ReactionThinking, pipeline.ReactionDone, pipeline.ReactionNone,
	}, p.statesOf("m1"))

	var next SessionParams
	require.NoError(t, decodeContinueAsNewInput(can, &next))
	require.NotNil(t, next.State)
	assert.Contains(t, next.State.Seen, "m1")
	assert.Equal(t, 1, next.State.TurnSeq)
	assert.Empty(t, next.State.Reactions)
}

func TestNextRunRearmsCarriedClearAndIgnoresSeenMessages(t *testing.T) {
	env, p := newEnv(t)
	carried := &State{
		Seen:      []string{"m1"},
		TurnSeq:   1,
		Status:    StatusIdle,
		Reactions: []Reaction{{MessageID: "m1", State: pipeline.ReactionDone, ClearAt: testStart.Add(45 * time.Second)}},
	}
	signalAt(env, time.Second, inbound("m1", "hi again, redelivered"))
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession, State: carried})

	require.NoError(t, env.GetWorkflowError())
	assert.Empty(t, p.turns, "a message seen by the previous run is not answered again")
	at, ok := p.clearedAt("m1")
	require.True(t, ok)
	assert.Equal(t, 45*time.Second, at)
}

func decodeContinueAsNewInput(can *workflow.ContinueAsNewError, out *SessionParams) error {
	if can.Input == nil || len(can.Input.Payloads) != 1 {
		return errors.New("continue-as-new has no single input")
	}
	return converterDefault().FromPayload(can.Input.Payloads[0], out)
}
