package slack

import (
	"net/http"
	"testing"
	"time"

	"github.com/slack-go/slack"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// A rate-limited event is dropped on purpose: answered 200 (a message, a
// reaction, a press), so that Slack does not deliver it again.
func TestEventsRateLimitedAreAnswered200(t *testing.T) {
	fake, to := startFake(t), newSink()
	to.limited = true
	events, interactivity := serveEvents(t, fake, to, nil)
	ctx := testContext(t)
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + fake.BotUserID + "> hi"})
	status, _ := do(t, fake.EventRequest(ctx, events, evs[0], slacktest.Redelivery{}))
	assert.Equal(t, http.StatusOK, status, "a message")
	status, _ = do(t, fake.EventRequest(ctx, events, slacktest.ReactionAdded("U1", "thumbsup", "C1", "1.000001"), slacktest.Redelivery{}))
	assert.Equal(t, http.StatusOK, status, "a reaction")
	press := fake.BlockActions(slacktest.BlockAction{Channel: "C1", User: "U7", MessageTS: "1700000000.000200",
		ActionID: "approve", BlockID: "proposal", Value: "approve:p1"})
	status, _ = do(t, fake.InteractionRequest(ctx, interactivity, press, slacktest.Redelivery{}))
	assert.Equal(t, http.StatusOK, status, "a press")
	calls, accepted, feedback := to.snapshot()
	assert.Equal(t, 2, calls, "the message and the press reached the sink")
	assert.Empty(t, accepted)
	assert.Empty(t, feedback)
}

func TestSocketAcksARateLimitedEnvelopeAtOnce(t *testing.T) {
	fake, to := startFake(t), newSink()
	to.limited = true
	ctx, _ := runSocketReceiver(t, fake, to, time.Second)
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	id := fake.SendEvent(evs[0])

	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(id) }))
	env := fake.Envelopes()
	require.Len(t, env, 1)
	assert.Zero(t, env[0].RetryAttempt, "acked the first time: never delivered again")
	calls, accepted, _ := to.snapshot()
	assert.Equal(t, 1, calls)
	assert.Empty(t, accepted)
}

func TestNotifyPostsInTheMessagesThread(t *testing.T) {
	fake := startFake(t)
	api := slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL()))
	parent, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	in := pipeline.Inbound{Channel: Channel, Account: fake.TeamID, ChatID: "C1", SenderID: "U1", ThreadID: parent.TS}
	require.NoError(t, Notify(testContext(t), api, in, adapters.SlowDownNotice))
	thread := fake.Thread("C1", parent.TS)
	require.Len(t, thread, 2)
	assert.Equal(t, adapters.SlowDownNotice, thread[1].Text)
	assert.Equal(t, fake.BotUserID, thread[1].User)
}
