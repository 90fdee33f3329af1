package discord

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

// The edit route's bucket (5 per 5 s) as the fake names it: previews
// stop while one call is left, and the final edit takes it. Its context
// ends long before the bucket's five seconds: had it to wait for them,
// it would fail.
func TestDiscordFinalIsNeverHeldBehindPreviews(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	fake.EnforceLimits(discordtest.PublishedLimits)
	c := outClient(t, fake, ClientConfig{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)

	id, err := c.Send(preview, pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "t/preview", Text: "Hel", Total: 1})
	require.NoError(t, err)
	skipped := 0
	for i := range 20 {
		err := c.Edit(preview, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "Hello " + strconv.Itoa(i)})
		if adapters.Skipped(err) {
			skipped++
			continue
		}
		require.NoError(t, err)
	}
	assert.Positive(t, skipped)
	require.NoError(t, c.Edit(ctx, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "Hello, the whole answer"}), "the final edit goes at once")
	assert.Zero(t, fake.RateLimitedAnswered())
	assert.LessOrEqual(t, len(fake.Calls(discordtest.RouteEdit)), 5)
	assert.Equal(t, "Hello, the whole answer", fake.Sent(outGeneral)[0].Content)
}

func TestDiscordPreviewEditThatChangesNothingIsNotSent(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	id, err := c.Send(ctx, pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "t/0", Text: "same", Total: 1})
	require.NoError(t, err)
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "same"}))
	assert.Empty(t, fake.Calls(discordtest.RouteEdit))
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "new"}))
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "new"}))
	assert.Len(t, fake.Calls(discordtest.RouteEdit), 1)
}

func TestDiscordEditHonoursRetryAfter(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	c := outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	id, err := c.Send(preview, pipeline.Delivery{Session: outSession(outGeneral), IdempotencyKey: "t/preview", Text: "a", Total: 1})
	require.NoError(t, err)
	fake.FailNext(discordtest.RouteEdit, 1, discordtest.RateLimited(30*time.Second))

	kind, wait := adapters.Classify(c.Edit(preview, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "ab"}))
	require.Equal(t, adapters.RateLimited, kind)
	assert.Equal(t, 30*time.Second, wait)
	assert.ErrorIs(t, c.Edit(preview, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "abc"}), adapters.ErrSkipped)
	kind, _ = adapters.Classify(c.Edit(ctx, pipeline.Edit{Session: outSession(outGeneral), PlatformMessageID: id, Text: "abcd"}))
	assert.Equal(t, adapters.RateLimited, kind, "the final edit waits too: the activity retries it after the wait")
	assert.Len(t, fake.Calls(discordtest.RouteEdit), 1, "only the edit answered 429 reached Discord")
}

// Two workers share the channel's messages but not what each remembers
// of them: worker A streamed the whole answer into the preview, a later
// attempt on worker B left part of it there, and the final delivery
// lands on A. A's memory says the preview shows the answer; the edit
// that makes it the reply goes all the same, where a preview's edit to
// what A remembers is skipped.
func TestDiscordFinalEditGoesWhateverThisWorkerRemembers(t *testing.T) {
	fake := outFake(t, discordtest.Options{})
	a, b := outClient(t, fake, ClientConfig{}), outClient(t, fake, ClientConfig{})
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	session := outSession(outGeneral)
	const answer = "Hello, the whole answer"

	id, err := a.Send(preview, pipeline.Delivery{Session: session, IdempotencyKey: "t/preview", Text: "Hel", Total: 1})
	require.NoError(t, err)
	require.NoError(t, a.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: id, Text: answer}))
	require.NoError(t, b.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: id, Text: "Hello, the"}))
	require.NoError(t, a.Edit(preview, pipeline.Edit{Session: session, PlatformMessageID: id, Text: answer}))
	require.Len(t, fake.Calls(discordtest.RouteEdit), 2, "a preview's edit to what A remembers is skipped")

	require.NoError(t, a.Edit(ctx, pipeline.Edit{Session: session, PlatformMessageID: id, Text: answer}))
	assert.Len(t, fake.Calls(discordtest.RouteEdit), 3, "the final edit is sent")
	assert.Equal(t, answer, fake.Sent(outGeneral)[0].Content)
}
