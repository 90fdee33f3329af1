package slack

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// healthLog records the states reported.
type healthLog struct {
	mu     sync.Mutex
	states []string
}

func (h *healthLog) Report(channel string, s adapters.Health) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if channel == Channel {
		h.states = append(h.states, s.State)
	}
}

func (h *healthLog) ups() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, s := range h.states {
		if s == adapters.StateUp {
			n++
		}
	}
	return n
}

// runSocketReceiver runs RunSocket against the fake until the test ends.
func runSocketReceiver(t *testing.T, fake *slacktest.Server, to *recordingSink, staleAfter time.Duration) (context.Context, *healthLog) {
	t.Helper()
	r := newTestReceiverFor(t, fake, to)
	health := &healthLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- r.RunSocket(ctx, SocketConfig{AppToken: fake.AppToken, BotToken: fake.BotToken, APIURL: fake.APIURL(), StaleAfter: staleAfter, Health: health})
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "RunSocket ends without an error when its context is done")
	})
	waitUntil(t, ctx, "the socket said hello", func() bool { return health.ups() >= 1 })
	return ctx, health
}

func TestSocketAcksAnEnvelopeOnlyAfterTheSinkAccepted(t *testing.T) {
	fake, to := startFake(t), newSink()
	hold, entered := make(chan struct{}), make(chan struct{}, 10)
	to.setHold(hold, entered)
	ctx, _ := runSocketReceiver(t, fake, to, time.Second)
	m, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	id := fake.SendEvent(evs[0])

	<-entered
	// The fake sends an envelope again only when its ack is overdue.
	require.NoError(t, fake.WaitFor(ctx, func() bool { env := fake.Envelopes(); return len(env) == 1 && env[0].RetryAttempt >= 1 }))
	assert.False(t, fake.Acked(id), "acked while the sink had not answered")
	close(hold)
	accepted := to.waitAccepted(t, ctx, 1)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(id) }))
	assert.Equal(t, m.TS, accepted[0].MessageID)
	assert.Equal(t, m.TS, accepted[len(accepted)-1].MessageID, "the redelivery is the same message, for the session to drop")
}

func TestSocketLeavesARefusedEnvelopeUnackedAndTakesTheRedelivery(t *testing.T) {
	fake, to := startFake(t), newSink()
	to.setFailNext(1)
	ctx, _ := runSocketReceiver(t, fake, to, time.Second)
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	id := fake.SendEvent(evs[0])

	accepted := to.waitAccepted(t, ctx, 1)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(id) }))
	calls, _, _ := to.snapshot()
	assert.Equal(t, 2, calls, "refused once, accepted on the redelivery")
	assert.Len(t, accepted, 1)
	env := fake.Envelopes()
	require.Len(t, env, 1)
	assert.Equal(t, 1, env[0].RetryAttempt, "the fake sent it again because the first was not acked")
	acks := 0
	for _, a := range fake.Acks() {
		if a.EnvelopeID == id {
			acks++
		}
	}
	assert.Equal(t, 1, acks)
}

func TestSocketTwinsOfAMentionGiveTheSameInbound(t *testing.T) {
	fake, to := startFake(t), newSink()
	ctx, _ := runSocketReceiver(t, fake, to, time.Second)
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "<@" + fake.BotUserID + "> status?"})
	require.Len(t, evs, 2, "message and app_mention")
	ids := []string{fake.SendEvent(evs[0]), fake.SendEvent(evs[1])}

	accepted := to.waitAccepted(t, ctx, 2)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(ids[0]) && fake.Acked(ids[1]) }))
	first, second := accepted[0], accepted[1]
	first.ReceivedAt, second.ReceivedAt = time.Time{}, time.Time{}
	assert.Equal(t, first, second)
	assert.True(t, first.MentionsBot)
}

func TestSocketInteractivePressIsAcceptedThenAcked(t *testing.T) {
	fake, to := startFake(t), newSink()
	ctx, _ := runSocketReceiver(t, fake, to, time.Second)
	id := fake.SendInteractive(fake.BlockActions(slacktest.BlockAction{Channel: "C1", User: "U7", MessageTS: "1.000009", Value: "approve:p1"}))
	accepted := to.waitAccepted(t, ctx, 1)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(id) }))
	assert.Equal(t, "approve:p1", accepted[0].Action)
	assert.Equal(t, "1.000009", accepted[0].ReplyTo)
}

func TestSocketSilentPastTheLimitIsClosedAndReplaced(t *testing.T) {
	fake, to := startFake(t), newSink()
	ctx, health := runSocketReceiver(t, fake, to, 500*time.Millisecond)
	fake.Silence(true)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Opened() >= 2 }), "no new socket after the pings stopped")
	fake.Silence(false)
	waitUntil(t, ctx, "the silent socket closed and the new one said hello", func() bool { return fake.Connections() == 1 && health.ups() >= 2 })

	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "still there?"})
	id := fake.SendEvent(evs[0])
	to.waitAccepted(t, ctx, 1)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(id) }))
}

// waitUntil checks cond every few milliseconds until it holds, or fails
// the test at ctx's deadline; for conditions no channel signals.
func waitUntil(t *testing.T, ctx context.Context, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("not so: %s (%v)", what, ctx.Err())
		}
	}
}

func TestSocketWithARejectedTokenReportsFailedAndStops(t *testing.T) {
	fake, to := startFake(t), newSink()
	r := newTestReceiverFor(t, fake, to)
	health := &healthLog{}
	err := r.RunSocket(testContext(t), SocketConfig{AppToken: "xapp-wrong", BotToken: fake.BotToken, APIURL: fake.APIURL(), Health: health})
	require.ErrorContains(t, err, "invalid_auth")
	require.ErrorContains(t, err, "REPLYFLOW_SLACK_APP_TOKEN")
	health.mu.Lock()
	defer health.mu.Unlock()
	require.NotEmpty(t, health.states)
	assert.Equal(t, adapters.StateFailed, health.states[len(health.states)-1])
}

func TestSocketAcksAnEnvelopeSlackGoCannotRead(t *testing.T) {
	fake, to := startFake(t), newSink()
	ctx, _ := runSocketReceiver(t, fake, to, time.Second)
	unreadable := fake.SendEvent(slacktest.Event{"type": "message", "channel": 42, "ts": "1.000001"})
	_, evs := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hi"})
	readable := fake.SendEvent(evs[0])
	to.waitAccepted(t, ctx, 1)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(unreadable) && fake.Acked(readable) }))
	calls, _, _ := to.snapshot()
	assert.Equal(t, 1, calls, "the unreadable event never reaches the sink")
}

// Over Socket Mode, slack-go parses the envelope itself and reports what
// it cannot read as a bad message; that envelope goes through the same
// salvage, is handed on, and acked once accepted.
func TestSocketSalvagesAnEventSlackGoCannotRead(t *testing.T) {
	fake, to := startFake(t), newSink()
	logs := &logBuffer{}
	r := newTestReceiverFor(t, fake, to)
	logTo(r, logs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- r.RunSocket(ctx, SocketConfig{AppToken: fake.AppToken, BotToken: fake.BotToken, APIURL: fake.APIURL(), StaleAfter: time.Second})
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})

	to.setFailNext(1)
	event := slacktest.Event{"type": "message", "channel": "C1", "channel_type": "channel", "user": "U1",
		"text": "hello from the future", "ts": "1700000002.000200", "blocks": futureBlock}
	strictParseFails(t, fake.EventCallback(event))
	salvaged := fake.SendEvent(event)
	broken := fake.SendEvent(slacktest.Event{"type": "message", "channel": "C1", "user": "U1", "text": "x", "ts": 5})
	accepted := to.waitAccepted(t, ctx, 1)
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Acked(salvaged) && fake.Acked(broken) }))
	calls, _, _ := to.snapshot()
	assert.Equal(t, 2, calls, "refused once, left unacked, and taken when Slack delivered it again")
	assert.Equal(t, "hello from the future", accepted[0].Text)
	assert.Equal(t, "1700000002.000200", accepted[0].MessageID)
	out := logs.String()
	assert.Contains(t, out, "Slack event read without the fields slack-go could not read")
	assert.Contains(t, out, "envelope="+salvaged)
	assert.Contains(t, out, "Slack envelope not understood")
	assert.Contains(t, out, "envelope="+broken)
	assert.NotContains(t, out, "hello from the future")
}

// holdChannel holds the hand-off of one channel's messages until released.
type holdChannel struct {
	*recordingSink
	channel string
	entered chan struct{} // told when a held hand-off starts
	release chan struct{}
}

func (h holdChannel) Accept(ctx context.Context, in pipeline.Inbound) error {
	if in.ChatID == h.channel {
		h.entered <- struct{}{}
		select {
		case <-h.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return h.recordingSink.Accept(ctx, in)
}

// A channel whose hand-off is slow holds up no other channel, and its own
// messages still reach Temporal in order.
func TestSocketHandsChannelsOnAtOnceAndEachInOrder(t *testing.T) {
	fake := startFake(t)
	fake.AddChannel(slacktest.Channel{ID: "C2", Members: 3})
	to := newSink()
	sink := holdChannel{recordingSink: to, channel: "C1", entered: make(chan struct{}, 100), release: make(chan struct{})}
	r, err := NewReceiver(ReceiverConfig{Bot: Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink})
	require.NoError(t, err)
	ctx := testContext(t)
	go func() {
		_ = r.RunSocket(ctx, SocketConfig{AppToken: fake.AppToken, BotToken: fake.BotToken, APIURL: fake.APIURL(), StaleAfter: time.Minute})
	}()
	require.NoError(t, fake.WaitFor(ctx, func() bool { return fake.Connections() > 0 }))

	first, evs1 := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "one"})
	second, evs2 := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "two"})
	other, evs3 := fake.AddMessage(slacktest.Post{Channel: "C2", User: "U2", Text: "elsewhere"})
	fake.SendEvent(evs1[0])
	select {
	case <-sink.entered:
	case <-ctx.Done():
		t.Fatal("C1's first message never reached the sink")
	}
	fake.SendEvent(evs2[0])
	fake.SendEvent(evs3[0])

	accepted := to.waitAccepted(t, ctx, 1)
	assert.Equal(t, other.TS, accepted[0].MessageID, "C2 went on while C1 was held")
	close(sink.release)
	accepted = to.waitAccepted(t, ctx, 3)
	var c1 []string
	for _, in := range accepted {
		if in.ChatID == "C1" {
			c1 = append(c1, in.MessageID)
		}
	}
	assert.Equal(t, []string{first.TS, second.TS}, c1[:2], "C1 in the order Slack sent it")
}
