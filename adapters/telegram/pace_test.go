package telegram

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
)

// Pacing is asserted through deadlines the budget cannot meet, never by
// measuring how long a wait took.
func TestPacerHoldsTheThirdMessageOfAChat(t *testing.T) {
	p := newPacer(Pacing{PerChat: time.Hour})
	ctx := context.Background()
	require.NoError(t, p.wait(ctx, adapters.PriorityFinal, "sendMessage", 5, costMessage), "two messages go at once")
	require.NoError(t, p.wait(ctx, adapters.PriorityFinal, "sendMessage", 5, costMessage))
	kind, wait := adapters.Classify(p.wait(ctx, adapters.PriorityFinal, "sendMessage", 5, costMessage))
	assert.Equal(t, adapters.RateLimited, kind, "the third would wait an hour: the activity's retry waits instead")
	assert.Greater(t, wait, 59*time.Minute)
	assert.NoError(t, p.wait(ctx, adapters.PriorityFinal, "sendMessage", 6, costMessage), "another chat is not held")
	assert.NoError(t, p.wait(ctx, adapters.PriorityProgress, "setMessageReaction", 5, costOther), "a reaction costs the chat nothing")
}

func TestPacerCapsAGroupPerMinute(t *testing.T) {
	p := newPacer(Pacing{GroupPerMinute: 3})
	ctx := context.Background()
	for range 2 {
		require.NoError(t, p.wait(ctx, adapters.PriorityFinal, "sendMessage", -100, costMessage))
	}
	kind, wait := adapters.Classify(p.wait(ctx, adapters.PriorityFinal, "sendMessage", -100, costMessage))
	assert.Equal(t, adapters.RateLimited, kind, "the third in a minute waits")
	assert.Greater(t, wait, 30*time.Second)
	for range 5 {
		require.NoError(t, p.wait(ctx, adapters.PriorityFinal, "sendMessage", 42, costMessage), "a private chat has no group cap")
	}
}

func TestPacerCapsTheBotOverAllChats(t *testing.T) {
	p := newPacer(Pacing{BotPerSecond: 3})
	ctx := context.Background()
	require.NoError(t, p.wait(ctx, adapters.PriorityFinal, "sendMessage", 1, costMessage))
	require.NoError(t, p.wait(ctx, adapters.PriorityFinal, "sendMessage", 2, costMessage))
	assert.ErrorIs(t, p.wait(ctx, adapters.PriorityPreview, "editMessageText", 3, costMessage), adapters.ErrSkipped, "the bot's second is spent")
}

func TestRateLimitedChatCoolsDown(t *testing.T) {
	p := newPacer(Pacing{})
	p.cool(7, time.Hour)
	assert.Greater(t, p.coolingDown(7), 59*time.Minute)
	assert.Zero(t, p.coolingDown(8))
	kind, _ := adapters.Classify(p.wait(context.Background(), adapters.PriorityFinal, "sendMessage", 7, costMessage))
	assert.Equal(t, adapters.RateLimited, kind, "nothing is sent during the cooldown")
	assert.ErrorIs(t, p.wait(context.Background(), adapters.PriorityPreview, "editMessageText", 7, costMessage), adapters.ErrSkipped)
}
