package telegram

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Pacing is asserted through deadlines the limiter cannot meet, never by
// measuring how long a wait took.
func TestPacerHoldsTheSecondMessageOfAChat(t *testing.T) {
	p := newPacer(Pacing{PerChat: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	require.NoError(t, p.wait(ctx, 5), "the first message goes at once")
	assert.Error(t, p.wait(ctx, 5), "the second would wait an hour")
	assert.NoError(t, p.wait(ctx, 6), "another chat is not held")
}

func TestPacerCapsAGroupPerMinute(t *testing.T) {
	p := newPacer(Pacing{GroupPerMinute: 3})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for range 3 {
		require.NoError(t, p.wait(ctx, -100))
	}
	assert.Error(t, p.wait(ctx, -100), "the fourth in a minute waits about 20 s")
	for range 5 {
		require.NoError(t, p.wait(ctx, 42), "a private chat has no group cap")
	}
}

func TestRateLimitedChatCoolsDown(t *testing.T) {
	p := newPacer(Pacing{})
	p.cool(7, time.Hour)
	assert.Greater(t, p.coolingDown(7), 59*time.Minute)
	assert.Zero(t, p.coolingDown(8))
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, p.wait(ctx, 7), context.DeadlineExceeded, "nothing is sent during the cooldown")
}

func TestPacerForgetsQuietChatsWhenFull(t *testing.T) {
	p := newPacer(Pacing{PerChat: time.Millisecond})
	old := time.Now().Add(-2 * time.Minute)
	p.mu.Lock()
	for i := range maxPacedChats {
		p.get(int64(i), old)
	}
	p.get(-1, time.Now())
	size := len(p.chats)
	p.mu.Unlock()
	assert.Equal(t, 1, size, "chats quiet for over a minute are dropped to make room")
}
