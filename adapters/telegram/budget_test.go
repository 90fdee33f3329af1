package telegram

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
)

func pacedClient(t *testing.T, fake *telegramtest.Server, pacing Pacing) *Client {
	t.Helper()
	c, err := NewClient(ClientConfig{Token: testToken, APIURL: fake.URL(), Pacing: pacing})
	require.NoError(t, err)
	return c
}

// A chat whose budget earns a token an hour: whatever must wait fails
// RateLimited at once, so "went at once" is an outcome, not a timing.
func TestAFinalIsNeverHeldBehindPreviews(t *testing.T) {
	fake := telegramtest.New(testToken)
	t.Cleanup(fake.Close)
	fake.EnforceLimits(telegramtest.PublishedLimits)
	c := pacedClient(t, fake, Pacing{PerChat: time.Hour, BotPerSecond: 30})
	chat := telegramtest.Private(user42.ID)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)

	id, err := c.Send(preview, pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "t/preview", Text: "Hel"})
	require.NoError(t, err)
	for i := range 20 {
		err := c.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "Hello " + strconv.Itoa(i)})
		require.ErrorIs(t, err, adapters.ErrSkipped, "edit %d: the chat's last token is kept for the answer", i)
	}
	require.NoError(t, c.Edit(ctx, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "Hello, the whole answer"}),
		"the final goes at once: it would fail RateLimited had it to wait an hour")
	assert.Len(t, fake.Calls("editMessageText"), 1, "no intermediate edit went")
	assert.Zero(t, fake.TooManyRequestsAnswered())
	assert.Equal(t, "Hello, the whole answer", fake.Sent(chat.ID)[0].Text)
}

func TestAPreviewEditThatChangesNothingIsNotSent(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Private(user42.ID)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	id, err := c.Send(ctx, pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "t/0", Text: "same"})
	require.NoError(t, err)
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "same"}))
	assert.Empty(t, fake.Calls("editMessageText"), "the message shows it already")
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "new"}))
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "new"}))
	assert.Len(t, fake.Calls("editMessageText"), 1)
	buttons := []pipeline.Button{{Text: "Approve", Action: "approve:p1"}}
	require.NoError(t, c.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "new", Buttons: buttons}))
	assert.Len(t, fake.Calls("editMessageText"), 2, "new buttons are a change")
}

func TestAnEditHonoursRetryAfter(t *testing.T) {
	fake, c := fakeAndClient(t, nil)
	chat := telegramtest.Private(user42.ID)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	id, err := c.Send(preview, pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "t/preview", Text: "a"})
	require.NoError(t, err)
	fake.FailNext("editMessageText", 1, telegramtest.TooManyRequests(30))

	kind, wait := adapters.Classify(c.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "ab"}))
	require.Equal(t, adapters.RateLimited, kind)
	assert.Equal(t, 30*time.Second, wait)
	assert.ErrorIs(t, c.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "abc"}), adapters.ErrSkipped, "the next preview edit is not tried")
	kind, wait = adapters.Classify(c.Edit(ctx, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "abcd"}))
	assert.Equal(t, adapters.RateLimited, kind, "nor is the final edit: the activity retries it after the wait")
	assert.Greater(t, wait, 25*time.Second)
	require.NoError(t, c.Typing(ctx, keyOf(chat), ""), "typing is skipped quietly")
	assert.Len(t, fake.Calls("editMessageText"), 1, "only the edit answered 429 reached Telegram")
	assert.Empty(t, fake.Calls("sendChatAction"))
}

// Two workers each keep their own budget; Telegram's 429 and its
// retry_after are all they share. What holds: every final is delivered
// once, and neither worker calls the chat while a retry_after it was
// given runs. What does not: one worker's 429 does not hold the other,
// which may meet a 429 of its own.
func TestTwoWorkersInOneChatHonourTheirRetryAfter(t *testing.T) {
	fake := telegramtest.New(testToken)
	t.Cleanup(fake.Close)
	fake.EnforceLimits(telegramtest.PublishedLimits)
	chat := telegramtest.Private(user42.ID)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Each worker sends from two activities at once: a 429 one of them
	// meets must hold the other too.
	const finals = 4
	var wg sync.WaitGroup
	for _, worker := range []string{"A", "B"} {
		c := pacedClient(t, fake, DefaultPacing)
		for slot := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := slot; i < finals; i += 2 {
					d := pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: fmt.Sprintf("%s/%d", worker, i), Text: fmt.Sprintf("%s%d", worker, i)}
					for ctx.Err() == nil {
						_, err := c.Send(ctx, d)
						wait, limited := retryAfter(err)
						if !limited {
							assert.NoError(t, err)
							break
						}
						// As the activity's retry does, with NextRetryDelay.
						select {
						case <-time.After(wait):
						case <-ctx.Done():
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	require.NoError(t, ctx.Err())

	sent := map[string]int{}
	for _, m := range fake.Sent(chat.ID) {
		sent[m.Text]++
	}
	for _, w := range []string{"A", "B"} {
		for i := range finals {
			assert.Equal(t, 1, sent[fmt.Sprintf("%s%d", w, i)], "%s%d delivered once", w, i)
		}
	}
	calls := fake.Calls("sendMessage")
	for i, call := range calls {
		if call.Status != 429 {
			continue
		}
		worker := call.Params["text"][:1]
		secs, _ := strconv.Atoi(call.Description[len("Too Many Requests: retry after "):])
		for _, later := range calls[i+1:] {
			if later.Params["text"][:1] == worker && later.At.Before(call.At.Add(time.Duration(secs)*time.Second)) {
				t.Errorf("worker %s called at %s, within the retry_after of %d s it was given at %s", worker, later.At, secs, call.At)
			}
		}
	}
	t.Logf("429s answered to two workers in one chat: %d", fake.TooManyRequestsAnswered())
}

func retryAfter(err error) (time.Duration, bool) {
	kind, wait := adapters.Classify(err)
	return wait, err != nil && kind == adapters.RateLimited
}

// Two workers share the chat's messages but not what each remembers of
// them: worker A streamed the whole answer into the preview, a later
// attempt on worker B left part of it there, and the final delivery
// lands on A. A's memory says the preview shows the answer; the edit
// that makes it the reply goes all the same, where a preview's edit to
// what A remembers is skipped.
func TestTheFinalEditGoesWhateverThisWorkerRemembers(t *testing.T) {
	fake := telegramtest.New(testToken)
	t.Cleanup(fake.Close)
	a, b := pacedClient(t, fake, Pacing{}), pacedClient(t, fake, Pacing{})
	chat := telegramtest.Private(user42.ID)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: user42, Text: "hi"})
	ctx := context.Background()
	preview := adapters.WithPriority(ctx, adapters.PriorityPreview)
	const answer = "Hello, the whole answer"

	id, err := a.Send(preview, pipeline.Delivery{Session: keyOf(chat), IdempotencyKey: "t/preview", Text: "Hel"})
	require.NoError(t, err)
	require.NoError(t, a.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: answer}))
	require.NoError(t, b.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: "Hello, the"}))
	require.NoError(t, a.Edit(preview, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: answer}))
	require.Len(t, fake.Calls("editMessageText"), 2, "a preview's edit to what A remembers is skipped")

	require.NoError(t, a.Edit(ctx, pipeline.Edit{Session: keyOf(chat), PlatformMessageID: id, Text: answer}))
	assert.Len(t, fake.Calls("editMessageText"), 3, "the final edit is sent")
	assert.Equal(t, answer, fake.Sent(chat.ID)[0].Text)
}
