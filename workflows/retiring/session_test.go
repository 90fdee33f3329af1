package retiring

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/pipeline"
)

func TestFastTurnRepliesAndClearsWithoutFlicker(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hello there"))
	run(t, env, nil)

	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"),
		"with no debounce 👀 is superseded by ✍️ in the same step, and ✍️ is left to the model step")
	require.Len(t, p.steps, 1)
	assert.Equal(t, []string{"m1"}, p.steps[0].Req.ThinkingOn, "the model step shows ✍️ if it outlasts the window")
	at, ok := p.clearedAt("m1")
	require.True(t, ok)
	assert.Equal(t, time.Second+time.Minute, at, "✅ is cleared by a durable timer 60 s after the reply")

	require.Len(t, p.sent, 1)
	assert.Equal(t, "echo hello there", p.sent[0].Text)
	assert.Equal(t, "m1", p.sent[0].ReplyTo, "the reply anchors the user's message")
	assert.Contains(t, p.sent[0].IdempotencyKey, "session:webchat:demo/")
	assert.Equal(t, 24*time.Hour, p.elapsed()-at, "the idle TTL starts once the last reaction is cleared")
}

func TestDebouncedMessageShowsReceivedFirst(t *testing.T) {
	env, p := newEnv(t, withDebounce(time.Second))
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionReceived, pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"))
	assert.Equal(t, time.Second, p.reactions[0].At, "👀 is shown as soon as the message is taken")
	assert.Equal(t, 2*time.Second, p.steps[0].At, "the turn starts when the window closes")
}

func TestDedupeWindowSlides(t *testing.T) {
	env, p := newEnv(t)
	for _, at := range []time.Duration{time.Second, 15 * time.Minute, 30 * time.Minute, 51 * time.Minute} {
		signalAt(env, at, inbound("m1", "again"))
	}
	signalAt(env, 52*time.Minute, inbound("m2", "new"))
	snap := queryStateAt(t, env, 53*time.Minute)
	run(t, env, nil)

	assert.Equal(t, []string{"again", "again", "new"}, p.turnTexts(),
		"a repeat within 20 minutes of the last sighting is dropped; 21 minutes after it, it is new again")
	assert.Equal(t, 2, snap.Counters.Duplicates)
	assert.Equal(t, 2, snap.SeenMessages, "old entries leave the window")
}

func TestDedupeHoldsAcrossContinueAsNew(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hi"))
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 10*time.Second)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})
	carried := continuedState(t, env)
	require.Len(t, p.sent, 1)
	assert.Equal(t, 1, carried.TurnSeq)
	require.Len(t, carried.Reactions, 1, "the pending clear of ✅ is carried")

	next, p2 := newEnvAt(t, testStart.Add(10*time.Second))
	next.RegisterDelayedCallback(func() { next.SignalWorkflow(SignalInbound, inbound("m1", "redelivered")) }, time.Second)
	run(t, next, carried)
	assert.Empty(t, p2.steps, "a message seen by the previous run is not answered again")
	at, ok := p2.clearedAt("m1")
	require.True(t, ok)
	assert.Equal(t, 61*time.Second, at, "the carried clear fires on its original schedule")
}

func TestContinueAsNewCarriesAnOpenDebounceWindow(t *testing.T) {
	longWait := func(p *fakePlatform) { p.settings.DebounceMaxWait = pipeline.Duration(time.Minute) }
	env, _ := newEnv(t, withDebounce(10*time.Second), longWait)
	signalAt(env, time.Second, inbound("m1", "part one"))
	env.RegisterDelayedCallback(func() { env.SetContinueAsNewSuggested(true) }, 2*time.Second)
	env.ExecuteWorkflow(WorkflowName, SessionParams{Session: demoSession})
	carried := continuedState(t, env)
	require.Len(t, carried.Buffers, 1)
	assert.Equal(t, testStart.Add(time.Second), carried.Buffers[0].FirstAt, "the window's start is carried, so its maximum wait holds across runs")

	next, p := newEnvAt(t, testStart.Add(2*time.Second), withDebounce(10*time.Second), longWait)
	next.RegisterDelayedCallback(func() {
		next.SignalWorkflow(SignalInbound, inbound("m2", "part two"))
	}, time.Second)
	run(t, next, carried)
	require.Len(t, p.steps, 1, "both parts make one turn across the two runs")
	assert.Equal(t, "part one\npart two", p.steps[0].Req.Text)
	assert.Equal(t, 13*time.Second, p.steps[0].At, "the window re-armed by part two closes 10 s after it")
}

func TestFailedTurnShowsErrorAndClearsItLater(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.agent = func(pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{}, temporal.NewNonRetryableApplicationError("bad output", pipeline.ErrFormat, errModelDown)
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	snap := queryStateAt(t, env, 2*time.Minute)
	run(t, env, nil)

	assert.Equal(t, []string{pipeline.ReplyFormatError}, p.replies(), "a short error reply")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionError, pipeline.ReactionNone}, p.statesOf("m1"))
	at, _ := p.clearedAt("m1")
	assert.Equal(t, time.Second+10*time.Minute, at, "❌ is cleared after the error clear delay")
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, "failed", snap.LastTurn.Outcome)
	assert.Contains(t, snap.LastTurn.Error, pipeline.ErrFormat)
}

func TestStateQueryShowsTheRunningTurnAndQueue(t *testing.T) {
	env, _ := newEnv(t, withSlowModel(5*time.Second))
	signalAt(env, time.Second, inbound("m1", "first"))
	signalAt(env, 2*time.Second, inbound("m2", "second"))
	during := queryStateAt(t, env, 3*time.Second)
	after := queryStateAt(t, env, 30*time.Second)
	run(t, env, nil)

	assert.Equal(t, StatusThinking, during.Status)
	require.NotNil(t, during.Active)
	assert.Equal(t, []string{"m1"}, during.Active.MessageIDs)
	require.Len(t, during.Queued, 1)
	assert.Equal(t, []string{"m2"}, during.Queued[0].MessageIDs)
	assert.Equal(t, pipeline.QueueFollowup, during.Queue.Mode)

	assert.Equal(t, StatusIdle, after.Status)
	assert.Nil(t, after.Active)
	assert.Equal(t, 2, after.TurnSeq)
	assert.Len(t, after.Deliveries, 2)
	require.Len(t, after.Reactions, 2, "both ✅ wait for their clear")
	assert.Equal(t, testStart.Add(11*time.Second+time.Minute), after.Reactions[1].ClearAt)
}

func TestLongReplyIsDeliveredAsOrderedChunksWithDistinctKeys(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) { p.settings.ChunkLimit = 20 })
	signalAt(env, time.Second, inbound("m1", "one two three four five six seven eight"))
	run(t, env, nil)

	require.Greater(t, len(p.sent), 1)
	keys := map[string]bool{}
	for i, d := range p.sent {
		assert.Equal(t, i, d.Index)
		assert.Equal(t, len(p.sent), d.Total)
		assert.LessOrEqual(t, len([]rune(d.Text)), 20)
		keys[d.IdempotencyKey] = true
		if i > 0 {
			assert.Empty(t, d.ReplyTo, "only the first chunk anchors")
		}
	}
	assert.Len(t, keys, len(p.sent))
}

// Slack counts a reply once rendered as mrkdwn, where every & is five
// characters: a Slack reply is cut so each chunk fits once rendered, and a
// reply elsewhere by its own text.
func TestSlackReplyIsChunkedByItsRenderedLength(t *testing.T) {
	reply := strings.Repeat("Q&A ", 30) // 120 characters, 240 once rendered: two halves of 120
	for _, tc := range []struct {
		channel string
		chunks  int
	}{{"slack", 2}, {"webchat", 1}} {
		t.Run(tc.channel, func(t *testing.T) {
			env, p := newEnv(t, func(p *fakePlatform) {
				p.settings.ChunkLimit = 120
				p.agent = func(pipeline.TurnRequest) (pipeline.TurnResult, error) {
					return pipeline.TurnResult{Reply: reply, Model: "demo/echo"}, nil
				}
			})
			in := inbound("m1", "tell me")
			in.Channel = tc.channel
			signalAt(env, time.Second, in)
			env.ExecuteWorkflow(WorkflowName, SessionParams{Session: pipeline.SessionKey{Channel: tc.channel, Chat: "demo"}})
			require.NoError(t, env.GetWorkflowError())

			sent := p.sentDeliveries()
			require.Len(t, sent, tc.chunks)
			var whole []string
			for _, d := range sent {
				if tc.channel == "slack" {
					assert.LessOrEqual(t, mrkdwn.Length(mrkdwn.Render(d.Text)), 120, "chunk %d once rendered", d.Index)
				}
				whole = append(whole, strings.TrimSpace(d.Text))
			}
			assert.Equal(t, strings.TrimSpace(reply), strings.Join(whole, " "), "nothing lost")
		})
	}
}

func TestSilentAndHeartbeatRepliesAreShaped(t *testing.T) {
	env, p := newEnv(t, func(p *fakePlatform) {
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			replies := map[string]string{"lurk": " no_reply ", "ping": "HEARTBEAT_OK all good", "glued": "NO_REPLYhello"}
			return pipeline.TurnResult{Reply: replies[req.Text], Model: "demo/echo"}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "lurk"))
	signalAt(env, 2*time.Second, inbound("m2", "ping"))
	signalAt(env, 3*time.Second, inbound("m3", "glued"))
	snap := queryStateAt(t, env, 1500*time.Millisecond)
	run(t, env, nil)

	assert.Equal(t, []string{"all good", "hello"}, p.replies(), "NO_REPLY is silent; the tokens are stripped")
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, "silent", snap.LastTurn.Outcome)
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"),
		"a silent turn still ends ✅ and clears")
}

func TestAClearThePlatformRefusedIsTriedAgainLater(t *testing.T) {
	failures := 0
	env, p := newEnv(t, func(p *fakePlatform) {
		p.refuseReaction = func(r pipeline.ReactionChange) error {
			if r.State == pipeline.ReactionNone && failures < 2 {
				failures++
				return errModelDown
			}
			return nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	snap := queryStateAt(t, env, 62*time.Second)
	run(t, env, nil)

	at, ok := p.clearedAt("m1")
	require.True(t, ok, "the clear got through in the end")
	assert.Equal(t, 61*time.Second+30*time.Second+time.Minute, at, "tried again after 30 s, then 1 min")
	require.Len(t, snap.Reactions, 1, "a clear still owed keeps the session from completing")
	assert.Equal(t, 1, snap.Reactions[0].Attempts)
}
