package slack

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/slack-go/slack"
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

// A message slack-go cannot read costs the catch-up no other message of
// its page: one with a block slack-go refuses is read without it, as its
// live event would be; one whose ts is no string is skipped and logged,
// without its text; the others are handed on, oldest first, and the
// conversation is caught up.
func TestCatchupReadsEveryMessageOfAPageSlackGoCannotReadWhole(t *testing.T) {
	fake, sink := startFake(t), newOutageSink()
	sink.up()
	const blockedText, unreadableText = "the words behind a block slack-go refuses", "the words of a message nobody can read"
	first, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "first"})
	blocked, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U2", Text: blockedText,
		Wire: map[string]any{"blocks": futureBlock}})
	fake.AddMessage(slacktest.Post{Channel: "C1", User: "U3", Text: unreadableText,
		Wire: map[string]any{"ts": map[string]any{"s": 1}, "blocks": futureBlock}})
	last, _ := fake.AddMessage(slacktest.Post{Channel: "C1", User: "U1", Text: "last"})

	// slack-go fails on the page as it fails on the message with the
	// block alone.
	_, err := slack.New(fake.BotToken, slack.OptionAPIURL(fake.APIURL())).
		GetConversationHistory(&slack.GetConversationHistoryParameters{ChannelID: "C1"})
	require.Error(t, err, "slack-go reads the page whole: it proves nothing of the catch-up")
	raw, err := json.Marshal(map[string]any{"type": "message", "user": "U2", "text": blockedText, "ts": blocked.TS, "blocks": futureBlock})
	require.NoError(t, err)
	require.Error(t, json.Unmarshal(raw, new(slack.Message)), "slack-go reads the message with the block")

	r, err := NewReceiver(ReceiverConfig{Bot: Identity{UserID: fake.BotUserID, BotID: fake.BotID}, Sink: sink})
	require.NoError(t, err)
	logs := &logBuffer{}
	logTo(r, logs)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan error, 1)
	go func() {
		done <- r.RunCatchup(ctx, CatchupConfig{BotToken: fake.BotToken, APIURL: fake.APIURL(), Team: fake.TeamID,
			Sessions: openSessions{{Key: pipeline.SessionKey{Channel: Channel, Account: fake.TeamID, Chat: "C1"}, LastInboundAt: time.Now().Add(-time.Hour)}}})
	}()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done)
	})
	waitUntil(t, ctx, "the conversation caught up", func() bool {
		c := r.catchup.Load()
		if c == nil {
			return false
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		e, ok := c.convs["C1"]
		return ok && !e.Value.(*conversation).behind
	})

	sink.mu.Lock()
	var handed []string
	for _, in := range sink.accepted {
		handed = append(handed, in.MessageID)
		if in.MessageID == blocked.TS {
			assert.Equal(t, blockedText, in.Text)
			assert.Equal(t, "U2", in.SenderID)
		}
	}
	sink.mu.Unlock()
	assert.Equal(t, []string{first.TS, blocked.TS, last.TS}, handed, "the readable messages, the salvaged one among them, oldest first")

	out := logs.String()
	assert.NotContains(t, out, unreadableText, "the log never carries a message")
	assert.NotContains(t, out, blockedText, "the log never carries a message")
	assert.Contains(t, out, `msg="Slack catch-up skipped a message it cannot read; the others of the page are caught up"`)
	assert.Contains(t, out, `ts="{\"s\":1}"`)
	assert.Contains(t, out, "read again with only the fields replyflow uses")
	assert.Contains(t, out, `msg="Slack catch-up read a message without the fields slack-go could not read; it goes on"`)
	assert.Contains(t, out, "ts="+blocked.TS)
	assert.Contains(t, out, "slack_channel=C1")
	assert.Contains(t, out, "messages=3", "the conversation's catch-up logged as done")
	assert.NotContains(t, out, "did not get through", "the page did not fail")
}
