package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters/slack/mrkdwn"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
)

// Faults of Slack's Web API on the way out: a reply in several chunks
// through 429s, and posts whose answers were lost.

// longAnswer is answered to every message by startChunkedSlackStack's
// model: a reply in several chunks, whatever notes the prompt carries.
const longAnswer = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen"

// answerModel answers every turn with its text.
type answerModel string

func (answerModel) Name() string { return "test/answer" }

func (m answerModel) Complete(context.Context, models.Prompt) (models.Completion, error) {
	return models.Completion{Text: string(m)}, nil
}

// startChunkedSlackStack is a Socket Mode stack whose answer (longAnswer)
// comes in small chunks, want as posted (at least three), and a channel
// of its own.
func startChunkedSlackStack(t *testing.T) (s *slackStack, channel string, want []string) {
	cfg := testConfig(t)
	cfg.ChunkLimit = 40
	s = startSlackStackIn(t, cfg, slackSocket)
	s.startWorker(answerModel(longAnswer))
	for _, c := range mrkdwn.Chunk(longAnswer, cfg.ChunkLimit) {
		want = append(want, mrkdwn.Render(c))
	}
	require.GreaterOrEqual(t, len(want), 3, "a first, a middle and a last chunk")
	return s, s.newSlackChannel(), want
}

// askAndWaitAnswered mentions the bot in channel, hands both events to
// the gateway, and waits until the post's reactions went through ✅ and
// were cleared, without ❌ on the way. It returns the post.
func (s *slackStack) askAndWaitAnswered(channel string) slacktest.Message {
	s.t.Helper()
	post, events := s.mention(channel, slackAlice, "", "tell me a long story")
	for _, ev := range events {
		s.deliver(ev)
	}
	s.waitCleared(channel, post.TS)
	lifecycle := s.reactionsOn(channel, post.TS)
	assert.Equal(s.t, "+eyes", lifecycle[0])
	assert.NotContains(s.t, lifecycle, "+x", "no delivery failed for good")
	return post
}

func slackTexts(msgs []slacktest.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Text)
	}
	return out
}

func TestSlack429StormEndsWithEveryChunkDeliveredOnce(t *testing.T) {
	t.Parallel()
	s, channel, want := startChunkedSlackStack(t)
	// Slack refuses posts with Retry-After across the reply: the first
	// chunk twice, a middle one once, the last one twice; and the first
	// duplicate lookup once.
	storm := map[int]int{0: 2, len(want) / 2: 1, len(want) - 1: 2}
	refusals := 0
	for i, n := range storm {
		fault := slacktest.RateLimited(1)
		chunk := want[i]
		fault.When = func(p map[string]string) bool { return p["text"] == chunk }
		s.fake.FailNext("chat.postMessage", n, fault)
		refusals += n
	}
	s.fake.FailNext("conversations.replies", 1, slacktest.RateLimited(1))

	post := s.askAndWaitAnswered(channel)
	replies := s.botReplies(channel, post.TS)
	assert.Equal(t, want, slackTexts(replies), "every chunk once, in order")
	for _, m := range replies {
		assert.Equal(t, post.TS, m.ThreadTS, "chunk %q in the post's thread", m.Text)
	}
	posts := s.fake.Calls("chat.postMessage")
	refused := 0
	for _, c := range posts {
		if c.Status == http.StatusTooManyRequests {
			refused++
		}
	}
	assert.Equal(t, refusals, refused, "every 429 was answered to a post (the storm hit the chunks it was meant for)")
	assert.Len(t, posts, len(want)+refusals, "no post beyond one per chunk and the refused ones")
	assert.Equal(t, http.StatusTooManyRequests, s.fake.Calls("conversations.replies")[0].Status)
	assert.Equal(t, 1, s.stateOf(s.key(channel)).TurnSeq)
	recordHistoryOf(t, s.client, s.key(channel), "slack_429_storm")
}

// A Deliver whose post went through but whose answer was lost (a 503
// after the post, then a connection closed without an answer) is retried
// by the activity's policy; the retry finds the post by its metadata and
// posts nothing new.
func TestSlackDeliverRetriedAfterALostAnswerPostsNothingNew(t *testing.T) {
	t.Parallel()
	s, channel, want := startChunkedSlackStack(t)
	// The first post (chunk 1) is made and answered 503; the next post
	// (chunk 2, unless chunk 1 was posted again) is made and hung up on.
	s.fake.FailNext("chat.postMessage", 1, slacktest.AnswerLost())
	s.fake.FailNext("chat.postMessage", 1, slacktest.HungUp())

	post := s.askAndWaitAnswered(channel)
	replies := s.botReplies(channel, post.TS)
	require.Equal(t, want, slackTexts(replies), "every chunk once, in order")
	posts := s.fake.Calls("chat.postMessage")
	require.Len(t, posts, len(want), "one post per chunk, the lost answers' included")
	assert.Equal(t, http.StatusServiceUnavailable, posts[0].Status)
	assert.Equal(t, 0, posts[1].Status, "hung up")
	assert.Equal(t, want[1], posts[1].Params["text"])

	snap := s.stateOf(s.key(channel))
	assert.Equal(t, 1, snap.TurnSeq)
	var recorded, posted []string
	for _, d := range snap.Deliveries {
		recorded = append(recorded, d.PlatformMessageID)
	}
	for _, m := range replies {
		posted = append(posted, m.TS)
	}
	assert.Equal(t, posted, recorded, "the session recorded the posts whose answers were lost")
	recordHistoryOf(t, s.client, s.key(channel), "slack_lost_answer")
}
