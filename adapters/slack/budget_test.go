package slack_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/slack"
	"github.com/replyflow/replyflow/adapters/slack/slacktest"
	"github.com/replyflow/replyflow/pipeline"
)

func pacedClient(t *testing.T, fake *slacktest.Server, every time.Duration) *slack.Client {
	t.Helper()
	c, err := slack.NewClient(slack.ClientConfig{Token: fake.BotToken, APIURL: fake.APIURL(), PostInterval: every})
	require.NoError(t, err)
	return c
}

// A channel whose budget earns a post an hour: a call that had to wait
// would fail RateLimited, so "went at once" is an outcome, not a timing.
func TestSlackFinalIsNeverHeldBehindPreviews(t *testing.T) {
	fake := outboundFake(t)
	fake.EnforceLimits(slacktest.PublishedLimits)
	c := pacedClient(t, fake, time.Hour)
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	session := outboundSession("C1")

	ts, err := c.Send(preview, pipeline.Delivery{Session: session, IdempotencyKey: "t/preview", Text: "Hel", Total: 1})
	require.NoError(t, err)
	skipped := 0
	for i := range 60 {
		err := c.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "Hello " + strconv.Itoa(i)})
		if adapters.Skipped(err) {
			skipped++
			continue
		}
		require.NoError(t, err)
	}
	assert.Positive(t, skipped, "chat.update's tier keeps a fifth of its minute from previews")
	require.NoError(t, c.Edit(ctx, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "Hello, the whole answer"}), "the final edit goes at once")
	_, err = c.Send(ctx, pipeline.Delivery{Session: session, IdempotencyKey: "t/1", Text: "and a second chunk", Index: 1, Total: 2})
	require.NoError(t, err, "the channel's last post is the final's")
	assert.Zero(t, fake.RateLimitedAnswered())
	m, _ := fake.Message("C1", ts)
	assert.Equal(t, "Hello, the whole answer", m.Text)
}

func TestSlackPreviewEditThatChangesNothingIsNotSent(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	session := outboundSession("C1")
	ts, err := c.Send(ctx, pipeline.Delivery{Session: session, IdempotencyKey: "t/0", Text: "same", Total: 1})
	require.NoError(t, err)
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "same"}))
	assert.Empty(t, fake.Calls("chat.update"))
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "new"}))
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "new"}))
	assert.Len(t, fake.Calls("chat.update"), 1)
}

func TestSlackEditHonoursRetryAfter(t *testing.T) {
	fake := outboundFake(t)
	c := outboundClient(t, fake)
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	session := outboundSession("C1")
	ts, err := c.Send(preview, pipeline.Delivery{Session: session, IdempotencyKey: "t/preview", Text: "a", Total: 1})
	require.NoError(t, err)
	fake.FailNext("chat.update", 1, slacktest.RateLimited(30))

	kind, wait := adapters.Classify(c.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "ab"}))
	require.Equal(t, adapters.RateLimited, kind)
	assert.Equal(t, 30*time.Second, wait)
	assert.ErrorIs(t, c.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "abc"}), adapters.ErrSkipped)
	kind, _ = adapters.Classify(c.Edit(ctx, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "abcd"}))
	assert.Equal(t, adapters.RateLimited, kind, "the final edit waits too: the activity retries it after the wait")
	assert.Len(t, fake.Calls("chat.update"), 1, "only the edit answered 429 reached Slack")
	_, err = c.Send(ctx, pipeline.Delivery{Session: session, IdempotencyKey: "t/1", Text: "a post", Total: 1})
	assert.NoError(t, err, "chat.update's Retry-After holds that method, not the channel's posts")
}

// Two workers share the channel's messages but not what each remembers
// of them: worker A streamed the whole answer into the preview, a later
// attempt on worker B left part of it there, and the final delivery
// lands on A. A's memory says the preview shows the answer; the edit
// that makes it the reply goes all the same, where a preview's edit to
// what A remembers is skipped.
func TestSlackFinalEditGoesWhateverThisWorkerRemembers(t *testing.T) {
	fake := outboundFake(t)
	a, b := outboundClient(t, fake), outboundClient(t, fake)
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	session := outboundSession("C1")
	const answer = "Hello, the whole answer"

	ts, err := a.Send(preview, pipeline.Delivery{Session: session, IdempotencyKey: "t/preview", Text: "Hel", Total: 1})
	require.NoError(t, err)
	require.NoError(t, a.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: answer}))
	require.NoError(t, b.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: "Hello, the"}))
	require.NoError(t, a.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: answer}))
	require.Len(t, fake.Calls("chat.update"), 2, "a preview's edit to what A remembers is skipped")

	require.NoError(t, a.Edit(ctx, pipeline.Edit{Session: session, PlatformMessageID: ts, Text: answer}))
	assert.Len(t, fake.Calls("chat.update"), 3, "the final edit is sent")
	m, _ := fake.Message("C1", ts)
	assert.Equal(t, answer, m.Text)
}
