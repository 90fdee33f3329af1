package discord

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/adapters/discord/discordtest"
	"github.com/replyflow/replyflow/pipeline"
)

// What the gateway's rate limits drop is handled: not retried, not
// fetched from the history again, a press answered.
func TestRateLimitedEventsAreHandledNotRetried(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	limited := func(in pipeline.Inbound) error {
		if in.Text == "too fast" || in.Action != "" {
			return &adapters.RateLimitedError{Limit: "sender", RetryAfter: time.Minute}
		}
		return nil
	}
	s.sink.set(func(k *sink) { k.fail = limited })
	r := s.run(t)
	s.connected(t, r)
	dropped := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "too fast"})
	next := s.fake.Post(discordtest.Post{Channel: general, Author: ada, Content: "later"})
	s.sink.waitAccepted(t, next.ID)
	proposal := s.fake.Post(discordtest.Post{Channel: general, Author: s.fake.BotID, Content: "run it?"})
	pressed := s.fake.Press(discordtest.Press{Channel: general, Message: proposal.ID, User: ada, CustomID: "approve:p1"})
	waitFake(t, s.fake, "the dropped press is answered", func() bool { return len(s.fake.Responses(pressed.ID)) == 1 })
	assert.Equal(t, 6, s.fake.Responses(pressed.ID)[0].Type, "a deferred update, as for an accepted press")

	calls, _, _ := s.sink.snapshot()
	tries := 0
	for _, c := range calls {
		if c.MessageID == dropped.ID {
			tries++
		}
	}
	assert.Equal(t, 1, tries, "offered once, never retried")
	assert.NotContains(t, s.sink.acceptedIDs(), dropped.ID)
	assert.Empty(t, s.logs.with("not accepted"), "a drop on purpose is no failure")
	assert.Empty(t, s.fake.Calls(discordtest.RouteHistory), "nor is it fetched again")
}

func TestNotifyPostsInTheThreadElseTheChannel(t *testing.T) {
	s := newSetup(t, discordtest.Options{})
	r := s.run(t)
	s.connected(t, r)
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	defer cancel()
	require.NoError(t, r.g.Notify(ctx, pipeline.Inbound{Channel: Channel, ChatID: general, ThreadID: thread, SenderID: ada}, adapters.SlowDownNotice))
	require.NoError(t, r.g.Notify(ctx, pipeline.Inbound{Channel: Channel, ChatID: dmID, SenderID: ada}, "in the DM"))
	inThread := s.fake.Sent(thread)
	require.Len(t, inThread, 1)
	assert.Equal(t, adapters.SlowDownNotice, inThread[0].Content)
	require.Len(t, s.fake.Sent(dmID), 1)
	assert.Empty(t, s.fake.Sent(general))
}
