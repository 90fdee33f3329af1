package retiring

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

func feedbackOn(messageID, eventID string) pipeline.Feedback {
	return pipeline.Feedback{Channel: "webchat", ChatID: "demo", EventID: eventID, MessageID: messageID, SenderID: "alice", Emoji: []string{"👍"}, At: testStart}
}

func TestFeedbackIsRecordedAndTheSessionStillCompletes(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hello"))
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalFeedback, feedbackOn("bot-1", "e1")) }, 2*time.Minute)
	run(t, env, nil)

	require.Len(t, p.feedback, 1)
	assert.Equal(t, "bot-1", p.feedback[0].MessageID)
	assert.Equal(t, []string{"👍"}, p.feedback[0].Emoji)
	assert.Equal(t, []string{"echo hello"}, p.replies(), "feedback starts no turn")
}

func TestFeedbackAloneStartsAndEndsASession(t *testing.T) {
	env, p := newEnv(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalFeedback, feedbackOn("12", "e2")) }, time.Second)
	run(t, env, nil)
	require.Len(t, p.feedback, 1)
	assert.Empty(t, p.steps)
}

func TestFeedbackTheStoreKeepsRefusingIsDroppedNotRetriedForever(t *testing.T) {
	// Local activities run on goroutines of their own, in real time: on a
	// loaded machine the last attempt may still be returning when the
	// workflow has ended, so the count is atomic and awaited.
	var calls atomic.Int32
	env, p := newEnv(t, func(p *fakePlatform) {
		p.refuseFeedback = func(pipeline.Feedback) error { calls.Add(1); return errors.New("store down") }
	})
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalFeedback, feedbackOn("12", "e3")) }, time.Second)
	run(t, env, nil)
	assert.Empty(t, p.feedback)
	assert.Eventually(t, func() bool { return calls.Load() >= feedbackAttempts }, 10*time.Second, 10*time.Millisecond)
	assert.EqualValues(t, feedbackAttempts, calls.Load(), "tried exactly feedbackAttempts times")
}
