package main

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

// The two ways Slack hands events to the gateway (REPLYFLOW_SLACK_MODE).
const (
	slackSocket = "socket" // Socket Mode: envelopes on a WebSocket, acked
	slackEvents = "events" // the Events API: signed POSTs, answered 200
)

var slackModes = []string{slackSocket, slackEvents}

// slackStack is a gateway receiving from a fake Slack in one mode, whose
// worker posts to the same fake.
type slackStack struct {
	*stack
	fake *slacktest.Server
	mode string
}

// startSlackStack runs a gateway on Socket Mode against a new fake Slack,
// whose worker posts to it, with pacing off.
func startSlackStack(t *testing.T, cfg Config) (*stack, *slacktest.Server) {
	s := startSlackStackIn(t, cfg, slackSocket)
	return s.stack, s.fake
}

// startSlackStackIn runs a gateway receiving in mode from a new fake
// Slack, whose worker posts to it, and returns once the gateway is
// connected (the socket said hello, or the events URL is served).
func startSlackStackIn(t *testing.T, cfg Config, mode string) *slackStack {
	cfg, fake := withSlack(t, cfg, mode)
	s := &slackStack{stack: startStack(t, cfg), fake: fake, mode: mode}
	s.waitSlackUp()
	return s
}

// withSlack points cfg at a new fake Slack in mode, with pacing off so
// the tests do not wait out Slack's limits.
func withSlack(t *testing.T, cfg Config, mode string) (Config, *slacktest.Server) {
	// The fake redelivers an unacked envelope only after a minute: a test
	// that wants a redelivery asks for it (slackStack.redeliver), so the
	// counts of acks and duplicates a test asserts do not depend on how
	// fast a loaded machine acks.
	return withSlackFake(t, cfg, mode, slacktest.Options{AckTimeout: time.Minute})
}

// withSlackFake is withSlack with a fake made with opts.
func withSlackFake(t *testing.T, cfg Config, mode string, opts slacktest.Options) (Config, *slacktest.Server) {
	fake := slacktest.New(opts)
	t.Cleanup(fake.Close)
	registerSecret("slack bot token", fake.BotToken)
	registerSecret("slack app token", fake.AppToken)
	registerSecret("slack signing secret", fake.SigningSecret)
	cfg = cfg.withOwnPlatforms()
	sl := platformOf[*slack.Platform](cfg)
	sl.BotToken, sl.APIURL, sl.PostInterval, sl.Mode = fake.BotToken, fake.APIURL(), 0, mode
	switch mode {
	case slackSocket:
		sl.AppToken = fake.AppToken
	case slackEvents:
		sl.SigningSecret = fake.SigningSecret
	default:
		t.Fatalf("no Slack mode %q", mode)
	}
	require.NoError(t, cfg.validate())
	return cfg, fake
}

// waitSlackUp waits until the gateway is connected to Slack.
func (s *slackStack) waitSlackUp() {
	s.t.Helper()
	require.Eventually(s.t, func() bool { return s.health()[slack.Channel].State == adapters.StateUp },
		time.Minute, 20*time.Millisecond, "the gateway never connected to Slack in %s mode: %+v", s.mode, s.health())
}

func waitForSlack(t *testing.T, fake *slacktest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, fake.WaitFor(ctx, cond), "waiting for %s", what)
}

// newSlackChannel adds a channel of its own to the fake: a fake Slack
// numbers its posts from the start, and the session of an earlier run of
// a test (the Temporal server outlives the fakes) must not see them.
func (s *slackStack) newSlackChannel() string {
	channel := uniqueSlackChannel("C")
	s.fake.AddChannel(slacktest.Channel{ID: channel, Members: 5})
	return channel
}

// key is the session of a channel of the fake's workspace.
func (s *slackStack) key(channel string) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: slack.Channel, Account: s.fake.TeamID, Chat: channel}
}

// mention posts text as user with a mention of the bot in front, in
// thread (top-level when ""), and returns the post and its events (the
// message and its app_mention twin).
func (s *slackStack) mention(channel, user, thread, text string) (slacktest.Message, []slacktest.Event) {
	s.t.Helper()
	post, events := s.fake.AddMessage(slacktest.Post{Channel: channel, User: user, ThreadTS: thread, Text: "<@" + s.fake.BotUserID + "> " + text})
	require.Len(s.t, events, 2, "Slack sends a message and an app_mention for one post that mentions the bot")
	return post, events
}

// slackDelivery is an event as it was handed to the gateway, kept to be
// sent again as Slack's redelivery of it.
type slackDelivery struct {
	envelope string // its envelope_id, in socket mode
	body     []byte // the signed body, in events mode
}

// deliver hands ev to the gateway as Slack does in the stack's mode and
// returns once the gateway has accepted it: the envelope acked, or the
// POST answered 200. Both come only after Temporal holds the message.
func (s *slackStack) deliver(ev slacktest.Event) slackDelivery {
	s.t.Helper()
	if s.mode == slackSocket {
		d := slackDelivery{envelope: s.fake.SendEvent(ev)}
		s.waitAcks(d.envelope, 1)
		return d
	}
	d := slackDelivery{body: s.fake.EventCallback(ev)}
	code, answer := s.postEvent(d.body, slacktest.Redelivery{})
	require.Equal(s.t, http.StatusOK, code, "the event is accepted: %s", answer)
	return d
}

// redeliver sends d again as Slack does when the first ack did not reach
// it in time, and returns once that was accepted too: in socket mode the
// same envelope as retry 1, in events mode the same body with
// X-Slack-Retry-Num 1 for an http_timeout.
func (s *slackStack) redeliver(d slackDelivery) {
	s.t.Helper()
	if s.mode == slackSocket {
		require.True(s.t, s.fake.Redeliver(d.envelope), "the fake knows envelope %s and has a socket", d.envelope)
		s.waitAcks(d.envelope, 2)
		return
	}
	code, answer := s.postEvent(d.body, slacktest.Redelivery{Num: 1, Reason: "http_timeout"})
	require.Equal(s.t, http.StatusOK, code, "the redelivery is accepted: %s", answer)
}

// waitAcks waits until the envelope was acked n times.
func (s *slackStack) waitAcks(envelope string, n int) {
	s.t.Helper()
	waitForSlack(s.t, s.fake, "ack "+strconv.Itoa(n)+" of envelope "+envelope, func() bool {
		acked := 0
		for _, a := range s.fake.Acks() {
			if a.EnvelopeID == envelope {
				acked++
			}
		}
		return acked >= n
	})
}

// eventsURL is where the gateway serves the Events API.
func (s *slackStack) eventsURL() string {
	return s.baseURL + platformOf[*slack.Platform](s.cfg).EventsPath
}

// postEvent POSTs body, signed, to the gateway's events URL.
func (s *slackStack) postEvent(body []byte, r slacktest.Redelivery) (int, string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.sendSlack(s.fake.SignedRequest(ctx, s.eventsURL(), "application/json", body, r))
}

// sendSlack sends req and returns the answer's status and body.
func (s *slackStack) sendSlack(req *http.Request) (int, string) {
	s.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	require.NoError(s.t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(s.t, err)
	return resp.StatusCode, string(body)
}

// botReplies are the bot's messages in a thread, oldest first.
func (s *slackStack) botReplies(channel, thread string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range s.fake.Thread(channel, thread) {
		if m.User == s.fake.BotUserID {
			out = append(out, m)
		}
	}
	return out
}

// reactionsOn is the bot's reaction calls on one message, in order:
// "+name" for an add, "-name" for a removal.
func (s *slackStack) reactionsOn(channel, ts string) []string {
	var out []string
	for _, c := range s.fake.Calls("reactions.add", "reactions.remove") {
		if c.Params["channel"] != channel || c.Params["timestamp"] != ts || c.Status != http.StatusOK || c.Error != "" {
			continue
		}
		sign := "+"
		if c.Method == "reactions.remove" {
			sign = "-"
		}
		out = append(out, sign+c.Params["name"])
	}
	return out
}

// waitCleared waits until the bot's reactions on each message went
// through ✅ and are gone.
func (s *slackStack) waitCleared(channel string, posts ...string) {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := s.fake.WaitFor(ctx, func() bool {
		for _, ts := range posts {
			calls := s.reactionsOn(channel, ts)
			if len(calls) == 0 || calls[len(calls)-1] != "-white_check_mark" || len(s.fake.Reactions(channel, ts)) > 0 {
				return false
			}
		}
		return true
	})
	if err != nil {
		for _, ts := range posts {
			s.t.Logf("reaction calls on %s: %v; on it now: %v", ts, s.reactionsOn(channel, ts), s.fake.Reactions(channel, ts))
		}
		s.t.Fatalf("waiting for the reactions on %v to be cleared: %v", posts, err)
	}
}
