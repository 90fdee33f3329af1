package slack

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// outageSink is Temporal as the gateway's Ingress meets it: down (every
// Accept refused) until up is called. It counts the refusals and the
// acceptances of each message.
type outageSink struct {
	mu       sync.Mutex
	down     bool
	refused  map[string]int
	accepted []pipeline.Inbound
}

func newOutageSink() *outageSink { return &outageSink{down: true, refused: map[string]int{}} }

func (s *outageSink) Accept(_ context.Context, in pipeline.Inbound) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		s.refused[in.MessageID]++
		return errors.New("temporal unavailable")
	}
	s.accepted = append(s.accepted, in)
	return nil
}

func (s *outageSink) up() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
}

func (s *outageSink) refusals(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused[id]
}

// acceptedOf counts how often the message was accepted.
func (s *outageSink) acceptedOf(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, in := range s.accepted {
		if in.MessageID == id {
			n++
		}
	}
	return n
}

// runCatchingUp runs RunSocket with sink and the given retry of a refused
// conversation's catch-up, until the test ends.
func runCatchingUp(t *testing.T, fake *slacktest.Server, sink *outageSink, retry time.Duration) context.Context {
	t.Helper()
	r, err := NewReceiver(ReceiverConfig{Bot: Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink})
	require.NoError(t, err)
	r.catchupTune = catchupTune{retryFirst: retry, retryLast: retry}
	health := &healthLog{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- r.RunSocket(ctx, SocketConfig{AppToken: fake.AppToken, BotToken: fake.BotToken, APIURL: fake.APIURL(), StaleAfter: time.Second, Health: health})
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	waitUntil(t, ctx, "the socket said hello", func() bool { return health.ups() >= 1 })
	return ctx
}

// exhaustRedeliveries posts a message, sends its event and waits until
// the fake sent it for the last time and the sink refused that too: from
// then on Slack sends it no more. The last delivery's refusal is known by
// a second message of the channel, sent after it: the receiver hands a
// channel's envelopes on in order, and a catch-up never reaches the
// second while the first is refused.
func exhaustRedeliveries(t *testing.T, ctx context.Context, fake *slacktest.Server, sink *outageSink) slacktest.Message {
	t.Helper()
	post, events := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "are you there?"})
	id := fake.SendEvent(events[0])
	waitUntil(t, ctx, "the envelope sent for the last time", func() bool {
		envs := fake.Envelopes()
		return len(envs) == 1 && envs[0].RetryAttempt == fake.MaxRetries
	})
	marker, events := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "hello?"})
	fake.SendEvent(events[0])
	waitUntil(t, ctx, "the last delivery refused", func() bool { return sink.refusals(marker.TS) >= 1 })
	require.False(t, fake.Acked(id), "a refused envelope is not acked")
	return post
}

func TestSocketCatchesUpAfterAReconnectWhatSlackGaveUpRedelivering(t *testing.T) {
	fake, sink := startFake(t), newOutageSink()
	// No retry of its own within the test: the reconnection fetches it.
	ctx := runCatchingUp(t, fake, sink, time.Hour)
	post := exhaustRedeliveries(t, ctx, fake, sink)
	require.Equal(t, 1+fake.MaxRetries, sink.refusals(post.TS), "only Slack's deliveries reached the sink")

	sink.up()
	opened := fake.Opened()
	fake.DropConnections()
	waitUntil(t, ctx, "the bot connected again", func() bool { return fake.Opened() > opened })
	waitUntil(t, ctx, "the message Slack gave up on handed to the sink", func() bool { return sink.acceptedOf(post.TS) >= 1 })
	assert.Equal(t, 1, sink.acceptedOf(post.TS), "handed once")
	assert.NotEmpty(t, fake.Calls("conversations.history"))
}

func TestSocketCatchesUpWhenTemporalTakesMessagesAgain(t *testing.T) {
	fake, sink := startFake(t), newOutageSink()
	ctx := runCatchingUp(t, fake, sink, 20*time.Millisecond)
	post := exhaustRedeliveries(t, ctx, fake, sink)

	opened := fake.Opened()
	sink.up()
	waitUntil(t, ctx, "the message Slack gave up on handed to the sink", func() bool { return sink.acceptedOf(post.TS) >= 1 })
	assert.Equal(t, 1, sink.acceptedOf(post.TS), "handed once")
	assert.Equal(t, opened, fake.Opened(), "no reconnection was needed")
}

// openSessions is Temporal's visibility as the gateway's Sessions lists
// it.
type openSessions []adapters.OpenSession

func (o openSessions) OpenSessions(_ context.Context, channel string) ([]adapters.OpenSession, error) {
	if channel != Channel {
		return nil, errors.New("asked for another channel's sessions")
	}
	return o, nil
}

func TestAStartedGatewayCatchesUpTheRunningSessionsConversations(t *testing.T) {
	fake, sink := startFake(t), newOutageSink()
	sink.up()
	// Posted while no gateway ran, and given up on by Slack: only history
	// has it. Another workspace's session with the same channel ID is not
	// this bot's.
	post, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "anyone?"})
	running := openSessions{
		{Key: pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}, LastInboundAt: time.Now().Add(-time.Hour)},
		{Key: pipeline.SessionKey{Channel: Channel, Account: "T0OTHER", Chat: "C2"}, LastInboundAt: time.Now().Add(-time.Hour)},
		// Read first (the most recently active), and refused for good:
		// the channel is gone; the round goes on without it.
		{Key: pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C9GONE"}, LastInboundAt: time.Now().Add(-time.Minute)},
	}
	r, err := NewReceiver(ReceiverConfig{Bot: Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- r.RunSocket(ctx, SocketConfig{AppToken: fake.AppToken, BotToken: fake.BotToken, APIURL: fake.APIURL(),
			Sessions: running, Team: fake.TeamID})
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	waitUntil(t, ctx, "the message posted while no gateway ran handed to the sink", func() bool { return sink.acceptedOf(post.TS) >= 1 })
	assert.Equal(t, 1, sink.acceptedOf(post.TS))
	for _, call := range fake.Calls("conversations.history") {
		assert.NotEqual(t, "C2", call.Params["channel"], "only the bot's workspace's sessions are read")
	}
}

// heldSessions answers the listing once release is closed, as a slow
// Temporal does.
type heldSessions struct {
	openSessions
	release chan struct{}
}

func (h heldSessions) OpenSessions(ctx context.Context, channel string) ([]adapters.OpenSession, error) {
	<-h.release
	return h.openSessions.OpenSessions(ctx, channel)
}

// Over the Events API the catch-up runs from the start: a message Slack
// gave up on while no gateway ran is fetched even when a newer message of
// the conversation arrives live before Temporal listed the sessions.
func TestEventsCatchUpAtStartWhatSlackGaveUpOnBeforeALiveMessage(t *testing.T) {
	fake, sink := startFake(t), newOutageSink()
	sink.up()
	missed, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "anyone?"})
	live, events := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U2", Text: "hello?"})
	sessions := heldSessions{release: make(chan struct{}), openSessions: openSessions{
		{Key: pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}, LastInboundAt: time.Now().Add(-time.Hour)},
	}}
	r, err := NewReceiver(ReceiverConfig{Bot: Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- r.RunCatchup(ctx, CatchupConfig{BotToken: fake.BotToken, APIURL: fake.APIURL(), Sessions: sessions, Team: fake.TeamID})
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	waitUntil(t, ctx, "the catch-up running", func() bool { return r.catchup.Load() != nil })
	ev, err := Parse(fake.EventCallback(events[0]))
	require.NoError(t, err)
	require.NoError(t, r.HandleEvent(ctx, ev))
	close(sessions.release)
	waitUntil(t, ctx, "the message Slack gave up on handed to the sink", func() bool { return sink.acceptedOf(missed.TS) >= 1 })
	assert.Equal(t, 1, sink.acceptedOf(missed.TS))
	assert.GreaterOrEqual(t, sink.acceptedOf(live.TS), 1)
}
