package retiring

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

func TestStatusAnswersFromStateAtOnceWhileATurnRuns(t *testing.T) {
	env, p := newEnv(t, withSlowModel(5*time.Second))
	signalAt(env, time.Second, inbound("m1", "think hard"))
	signalAt(env, 2*time.Second, inbound("m2", "queued"))
	signalAt(env, 3*time.Second, inbound("s1", "/status"))
	signalAt(env, time.Minute, inbound("s2", "/status"))
	run(t, env, nil)

	byAnchor := map[string]sent{}
	for _, s := range p.sent {
		byAnchor[s.ReplyTo] = s
	}
	during := byAnchor["s1"]
	assert.Equal(t, 3*time.Second, during.At, "not queued behind the running turn")
	assert.Equal(t, "Session session:webchat:demo\nModel: demo/echo\nQueue: followup, debounce 0s, cap 20, drop summarize (depth 1)\nState: thinking\nLast turn: none yet (turns so far: 1)", during.Text)
	assert.Contains(t, byAnchor["s2"].Text, "Last turn: answered in 5s (turns so far: 2)")
	assert.Len(t, p.steps, 2, "status never calls the model")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("s1"),
		"no 👀 on a command: its ✅ follows at once")
}

func TestQueueCommandShowsAndResetsSettings(t *testing.T) {
	env, p := newEnv(t, withMembersOpen())
	signalAt(env, time.Second, inbound("c1", "/queue interrupt debounce:2s"))
	signalAt(env, 2*time.Second, inbound("c2", "/queue"))
	signalAt(env, 3*time.Second, inbound("c3", "/queue default"))
	run(t, env, nil)

	require.Len(t, p.sent, 3)
	assert.Equal(t, "Queue settings for this chat: interrupt, debounce 2s, cap 20, drop summarize.", p.sent[0].Text)
	assert.Contains(t, p.sent[1].Text, "Queue settings: interrupt, debounce 2s, cap 20, drop summarize.")
	assert.Equal(t, "Queue settings back to the defaults: followup, debounce 0s, cap 20, drop summarize.", p.sent[2].Text)
}

func TestStopAbortsTheTurnClearsTheQueueAndTellsTheNextTurn(t *testing.T) {
	env, p := newEnv(t, withSlowModel(5*time.Second))
	signalAt(env, time.Second, inbound("m1", "long job"))
	signalAt(env, 2*time.Second, inbound("m2", "queued"))
	signalAt(env, 3*time.Second, inbound("s1", "Stop!"))
	signalAt(env, 10*time.Second, inbound("m3", "new question"))
	snap := queryStateAt(t, env, 4*time.Second)
	run(t, env, nil)

	assert.Equal(t, []string{pipeline.AbortedReply, "echo " + pipeline.AbortedNotice + "\n\nnew question"}, p.replies())
	assert.Equal(t, []string{"long job", pipeline.AbortedNotice + "\n\nnew question"}, p.turnTexts(), "the queued message never ran")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionNone}, p.statesOf("m2"))
	_, cleared := p.clearedAt("m1")
	assert.True(t, cleared)
	assert.Equal(t, "aborted", snap.LastTurn.Outcome)
	assert.Empty(t, snap.Queued)
	assert.Equal(t, 1, snap.Counters.Aborted)
}

func TestChatSettingsAreSavedAndPickedUpByTheNextRun(t *testing.T) {
	env, p := newEnv(t, withMembersOpen())
	signalAt(env, time.Second, inbound("c1", "/queue collect"))
	signalAt(env, 2*time.Second, from("boss", inbound("c2", "/model anthropic/x"))) // an owner: anthropic/x is not in the chain
	signalAt(env, 3*time.Second, inbound("c3", "/new"))
	signalAt(env, 4*time.Second, inbound("m1", "hi"))
	signalAt(env, 5*time.Second, inbound("m2", "again"))
	run(t, env, nil)

	require.Len(t, p.saved, 2, "each change is saved in the session entry")
	assert.Equal(t, "anthropic/x", p.saved[1].ModelOverride)
	require.NotNil(t, p.saved[1].Queue)
	assert.Equal(t, pipeline.QueueCollect, *p.saved[1].Queue.Mode)
	require.Len(t, p.steps, 2)
	assert.True(t, p.steps[0].Req.NewTranscript, "/new makes the next turn start a fresh transcript")
	assert.False(t, p.steps[1].Req.NewTranscript, "only that one")

	next, p2 := newEnv(t, func(p *fakePlatform) { p.settings.Saved = pipeline.SessionSettings{ModelOverride: "anthropic/x"} })
	next.RegisterDelayedCallback(func() { next.SignalWorkflow(SignalInbound, inbound("m3", "later")) }, time.Second)
	run(t, next, nil)
	require.Len(t, p2.steps, 1)
	assert.Equal(t, "anthropic/x", p2.steps[0].Req.Model, "a new run starts with the saved model")
}

// overflowThenAnswer fails a step with ContextOverflow unless it starts a
// new transcript, so each turn goes through the reset-and-retry path.
func overflowThenAnswer(p *fakePlatform) {
	p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
		if !req.NewTranscript {
			return pipeline.TurnResult{}, temporal.NewNonRetryableApplicationError("too long", pipeline.ErrContextOverflow, nil)
		}
		return pipeline.TurnResult{Reply: "answer to " + req.Messages[len(req.Messages)-1].Text, Model: req.Model}, nil
	}
}

func TestStopCancelsTheContextOverflowRetry(t *testing.T) {
	env, p := newEnv(t, withSlowModel(5*time.Second), overflowThenAnswer)
	signalAt(env, time.Second, inbound("m1", "long job"))
	signalAt(env, 8*time.Second, inbound("s1", "/stop"))
	snap := queryStateAt(t, env, 30*time.Second)
	run(t, env, nil)

	require.Len(t, p.steps, 2, "the first attempt overflowed, the retry started")
	assert.NotContains(t, p.replies(), "answer to long job", "a stopped retry delivers nothing")
	assert.Contains(t, p.replies(), pipeline.AbortedReply)
	assert.Equal(t, "aborted", snap.LastTurn.Outcome)
	at, ok := p.clearedAt("m1")
	require.True(t, ok)
	assert.Equal(t, 8*time.Second, at, "✍️ is cleared at once")
}

func TestInterruptCancelsTheContextOverflowRetry(t *testing.T) {
	env, p := newEnv(t, withQueue(pipeline.QueueInterrupt), withSlowModel(5*time.Second), overflowThenAnswer)
	signalAt(env, time.Second, inbound("m1", "long job"))
	signalAt(env, 8*time.Second, inbound("m2", "never mind"))
	run(t, env, nil)

	assert.NotContains(t, p.replies(), "answer to long job", "the interrupted retry's answer is not delivered")
	assert.Contains(t, p.replies(), "answer to never mind", "the newer message got the next turn")
}

func TestAStopWinsOverAnInterruptWhereverTheTurnIs(t *testing.T) {
	for name, opts := range map[string][]func(*fakePlatform){
		"model step": {withSlowModel(5 * time.Second)},
		"tool step":  {toolScript([]pipeline.ToolCall{pay})},
	} {
		t.Run(name, func(t *testing.T) {
			env, p := newEnv(t, append(opts, withQueue(pipeline.QueueInterrupt))...)
			signalAt(env, time.Second, inbound("m1", "job"))
			env.RegisterDelayedCallback(func() {
				// One workflow step: the interrupt, then the stop.
				env.SignalWorkflow(SignalInbound, inbound("m2", "newer"))
				env.SignalWorkflow(SignalInbound, inbound("s1", "/stop"))
			}, 3*time.Second)
			snap := queryStateAt(t, env, 4*time.Second)
			run(t, env, nil)

			assert.Equal(t, "aborted", snap.LastTurn.Outcome, "the stop dropped the interrupting message too")
			replies := p.replies()
			require.NotEmpty(t, replies)
			assert.Equal(t, pipeline.AbortedReply, replies[len(replies)-1], "nothing is answered after the stop")
			assert.NotContains(t, replies, "echo newer")
		})
	}
}
