package main

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// What the gateway's wiring adds to the Events API handlers (their own
// tests are in adapters/slack): the URLs are served on the gateway's
// server, with the signing secret; they answer 503 until
// the gateway knows who the bot is, and 200 only once Temporal holds the
// message. Nothing refused reaches the session.
func TestSlackEventsURLOnTheGatewayAnswers200OnlyOnceTemporalHoldsTheMessage(t *testing.T) {
	t.Parallel()
	cfg, fake := withSlack(t, testConfig(t), slackEvents)
	// auth.test fails until the flag is lowered, so the gateway is not
	// connected to Slack for as long as the test needs.
	var unreachable atomic.Bool
	unreachable.Store(true)
	fake.FailNext("auth.test", 1000, slacktest.Fault{Status: http.StatusServiceUnavailable, When: func(map[string]string) bool { return unreachable.Load() }})
	s := &slackStack{stack: startStack(t, cfg), fake: fake, mode: slackEvents}
	waitForSlack(t, fake, "the gateway's first auth.test", func() bool { return len(fake.Calls("auth.test")) > 0 })
	channel := s.newSlackChannel()
	post, events := s.mention(channel, slackAlice, "", "are you there?")
	message := fake.EventCallback(events[0])

	code, answer := s.postEvent(message, slacktest.Redelivery{})
	assert.Equal(t, http.StatusServiceUnavailable, code, "not connected to Slack yet, so Slack must deliver again: %s", answer)
	unreachable.Store(false)
	s.waitSlackUp()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	forged := fake.SignedRequest(ctx, s.eventsURL(), "application/json", message, slacktest.Redelivery{})
	forged.Header.Set("X-Slack-Signature", slacktest.Sign("not-the-signing-secret", forged.Header.Get("X-Slack-Request-Timestamp"), message))
	code, answer = s.sendSlack(forged)
	assert.Equal(t, http.StatusUnauthorized, code, answer)
	press := fake.InteractionRequest(ctx, s.baseURL+platformOf[*slack.Platform](s.cfg).InteractivityPath, fake.BlockActions(slacktest.BlockAction{Channel: channel, User: slackAlice, MessageTS: post.TS, ActionID: "x", Value: "x"}), slacktest.Redelivery{})
	press.Header.Set("X-Slack-Signature", "v0=00")
	code, answer = s.sendSlack(press)
	assert.Equal(t, http.StatusUnauthorized, code, "the interactivity URL checks the signature too: %s", answer)
	code, answer = s.sendSlack(fake.URLVerificationRequest(ctx, s.eventsURL(), "challenge-e2e"))
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "challenge-e2e", answer, "url_verification is answered with its challenge")
	code, answer = s.postEvent([]byte(`{"hello":"world"}`), slacktest.Redelivery{})
	assert.Equal(t, http.StatusBadRequest, code, "a signed body that is no event: %s", answer)
	_, err := s.client.DescribeWorkflowExecution(ctx, s.key(channel).WorkflowID(), "")
	var notFound *serviceerror.NotFound
	require.ErrorAs(t, err, &notFound, "nothing refused reached Temporal")

	// Slack's retry of the event refused with 503, then the twin: each
	// 200 means Temporal holds its signal already, before any worker ran.
	code, answer = s.postEvent(message, slacktest.Redelivery{Num: 1, Reason: "http_error"})
	require.Equal(t, http.StatusOK, code, answer)
	assert.Equal(t, 1, inboundSignals(t, s.stack, s.key(channel)))
	s.deliver(events[1])
	assert.Equal(t, 2, inboundSignals(t, s.stack, s.key(channel)))

	s.startWorker(&testModel{})
	s.waitCleared(channel, post.TS)
	replies := s.botReplies(channel, post.TS)
	require.Len(t, replies, 1)
	assert.Equal(t, "You said: are you there?", firstLine(replies[0].Text))
	snap := s.stateOf(s.key(channel))
	assert.Equal(t, 1, snap.Counters.Inbound)
	assert.Equal(t, 1, snap.Counters.Duplicates, "only the twin was a second copy")
	assert.Equal(t, 1, snap.TurnSeq)
}

// inboundSignals counts the inbound signals in the history of the
// session's current run; 0 when there is no session.
func inboundSignals(t *testing.T, s *stack, key pipeline.SessionKey) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	signals := 0
	iter := s.client.GetWorkflowHistory(ctx, key.WorkflowID(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		var notFound *serviceerror.NotFound
		if errors.As(err, &notFound) {
			return 0 // no signal has started the session
		}
		require.NoError(t, err)
		if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.SignalName == workflows.SignalInbound {
			signals++
		}
	}
	return signals
}
