package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// slackPlatform talks through the fake Slack over Socket Mode: envelopes
// the gateway must ack, sent again when it does not. Even conversations
// are in channels, where the user mentions the bot (Slack sends the
// message and app_mention twins of each post) and every answer goes in
// the post's thread; odd ones are DMs, answered top-level. So a retried
// post's lookup reads both places (conversations.replies and .history).
// The Client puts each chunk's idempotency key in the post's metadata
// and looks for it before posting: no duplicate is allowed here.
type slackPlatform struct {
	fake *slacktest.Server
}

// slackAckTimeout is how long the fake waits for an envelope's ack before
// it sends the envelope again (three times at most, as Slack). It is
// Slack's deadline, 3 s; the fake's default of 2 s is for quick tests.
// Slack spaces its later retries by minutes, which the fake does not:
// an envelope left unacked through four deliveries (gateway deaths, a
// backlog in the gateway) is lost here far sooner than on Slack.
const slackAckTimeout = 3 * time.Second

func newSlack() *slackPlatform {
	return &slackPlatform{fake: slacktest.New(slacktest.Options{AckTimeout: slackAckTimeout})}
}

func (s *slackPlatform) name() string           { return "slack" }
func (s *slackPlatform) env() map[string]string { return harness.SlackVars(s.fake) }
func (s *slackPlatform) close()                 { s.fake.Close() }

func (s *slackPlatform) say(conv, k int, token string) sent {
	ch := slacktest.Channel{ID: fmt.Sprintf("DCHAOS%03d", conv), Members: 2}
	text := "hello " + token
	if conv%2 == 0 {
		ch = slacktest.Channel{ID: fmt.Sprintf("CCHAOS%03d", conv), Members: 5}
		text = "<@" + s.fake.BotUserID + "> " + text
	}
	channel := ch.ID
	if k == 0 {
		s.fake.AddChannel(ch)
	}
	post, events := s.fake.AddMessage(slacktest.Post{Channel: channel, User: fmt.Sprintf("U0CHAOS%03d", conv), Text: text})
	for _, ev := range events {
		s.fake.SendEvent(ev)
	}
	return sent{chat: channel, msg: post.TS, token: token}
}

func (s *slackPlatform) answered(m sent) bool {
	for _, b := range s.fake.Sent(m.chat) {
		if strings.Contains(b.Text, m.token) {
			return true
		}
	}
	return false
}

func (s *slackPlatform) showing(m sent) string {
	return strings.Join(s.fake.Reactions(m.chat, m.msg), " ")
}

func (s *slackPlatform) waitFor(ctx context.Context, cond func() bool) error {
	return s.fake.WaitFor(ctx, cond)
}

func (s *slackPlatform) posts() []slacktest.Call {
	var out []slacktest.Call
	for _, c := range s.fake.Calls("chat.postMessage") {
		if c.Status == 200 && c.Error == "" {
			out = append(out, c)
		}
	}
	return out
}

func (s *slackPlatform) posted() int { return len(s.posts()) }

func (s *slackPlatform) session(chat string) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: slack.Channel, Account: s.fake.TeamID, Chat: chat}
}

// tally counts chunks posted twice in one place (the same text in the
// same thread of a channel). None is explained: the lookup before each
// post must have found the first. Each is reported with the kills that
// were in flight, to show where to look. Its figures are the retried
// posts that found their chunk, and the envelopes the fake sent again
// (not acked within its ack timeout: lost to a gateway kill, or acked
// late).
func (s *slackPlatform) tally(kills []kill, workerLog string, rep *platformReport) {
	rep.strict = "a retry looks for its chunk's key before posting"
	again, envelopes := 0, s.fake.Envelopes()
	for _, env := range envelopes {
		if env.RetryAttempt > 0 {
			again++
		}
	}
	rep.figures = append(rep.figures,
		fmt.Sprintf("retries that found it    %d (posts the lookup saved from being made twice)", strings.Count(workerLog, foundLine)),
		fmt.Sprintf("envelopes sent again     %d of %d (not acked in time)", again, len(envelopes)))
	type chunk struct{ channel, thread, text string }
	firstAt := map[chunk]time.Time{}
	for _, call := range s.posts() {
		c := chunk{call.Params["channel"], call.Params["thread_ts"], call.Params["text"]}
		first, seen := firstAt[c]
		if !seen {
			firstAt[c] = call.At
			continue
		}
		rep.duplicates++
		where := "top-level"
		if c.thread != "" {
			where = "in thread " + c.thread
		}
		rep.problems = append(rep.problems, fmt.Sprintf("channel %s got %q twice %s (first at %s, again at %s; %s)",
			c.channel, firstLine(c.text), where, first.Format(timeFormat), call.At.Format(timeFormat), nearKills(kills, first)))
	}
}

// foundLine is what the Slack Client logs when a Send finds its chunk
// already posted (adapters/slack client.go): each is a retry that would
// have posted twice without the lookup.
const foundLine = "Chunk already posted; not posting it again"

// why tells what became of an unanswered message's envelopes: how far
// the fake's redeliveries went, and whether the gateway acked each.
func (s *slackPlatform) why(m sent) string {
	var out []string
	for _, env := range s.fake.Envelopes() {
		var body struct {
			Event struct{ Type, TS, Channel string } `json:"event"`
		}
		if json.Unmarshal(env.Payload, &body) != nil || body.Event.TS != m.msg || body.Event.Channel != m.chat {
			continue
		}
		acked := "never acked"
		if s.fake.Acked(env.EnvelopeID) {
			acked = "acked"
		}
		out = append(out, fmt.Sprintf("%s (%s) last retry_attempt %d, %s", env.EnvelopeID, body.Event.Type, env.RetryAttempt, acked))
	}
	if len(out) == 0 {
		return "no envelope carried it"
	}
	return "envelopes: " + strings.Join(out, "; ")
}
