package budget

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/adapters"
)

// clock is a budget's time, moved by hand: no assertion here depends on
// how fast the machine is.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// atOnce is a budget on a stopped clock whose calls may not wait at
// all: a call that would have to wait fails RateLimited.
func atOnce() (*Budget, *clock) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	b := New(time.Nanosecond, 0)
	b.now = c.now
	return b, c
}

var perSecond = Rule{Every: time.Second, Burst: 2, Reserve: 1}

func chat(cost int) Draw { return Draw{Key: "chat", Rule: perSecond, Cost: cost} }

func TestAPreviewLeavesTheReserveForAFinal(t *testing.T) {
	b, _ := atOnce()
	ctx := context.Background()
	require.NoError(t, b.Take(ctx, adapters.PriorityPreview, "edit", chat(1)), "two tokens: the preview takes one")
	assert.ErrorIs(t, b.Take(ctx, adapters.PriorityPreview, "edit", chat(1)), adapters.ErrSkipped, "the last token is the final's")
	assert.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", chat(1)), "the final goes at once, never behind the previews")
	_, limited := RateLimited(b.Take(ctx, adapters.PriorityFinal, "send", chat(1)))
	assert.True(t, limited, "a second final in the same second would have to wait")
}

func TestPreviewsComeBackAsTokensDo(t *testing.T) {
	b, c := atOnce()
	ctx := context.Background()
	require.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", chat(1)))
	require.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", chat(1)))
	assert.ErrorIs(t, b.Take(ctx, adapters.PriorityPreview, "edit", chat(1)), adapters.ErrSkipped)
	c.add(time.Second)
	assert.ErrorIs(t, b.Take(ctx, adapters.PriorityPreview, "edit", chat(1)), adapters.ErrSkipped, "one token back: still the reserve")
	c.add(time.Second)
	assert.NoError(t, b.Take(ctx, adapters.PriorityPreview, "edit", chat(1)))
}

// waitingOn waits until n callers of priority p wait on key.
func waitingOn(t *testing.T, b *Budget, key string, p adapters.Priority, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		got := 0
		if bk := b.buckets[key]; bk != nil {
			got = bk.waiting[p]
		}
		b.mu.Unlock()
		if got == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d %s callers never waited on %s (%d do)", n, p, key, got)
		time.Sleep(time.Millisecond)
	}
}

func TestNothingOvertakesAWaitingFinal(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	b := New(48*time.Hour, 0)
	b.now = c.now
	slow := Rule{Every: time.Hour, Burst: 1}
	draw := Draw{Key: "chat", Rule: slow, Cost: 1}
	require.NoError(t, b.Take(context.Background(), adapters.PriorityFinal, "send", draw))

	ctx, cancel := context.WithCancel(context.Background())
	final := make(chan error, 1)
	go func() { final <- b.Take(ctx, adapters.PriorityFinal, "send", draw) }()
	waitingOn(t, b, "chat", adapters.PriorityFinal, 1)

	c.add(time.Hour) // a token is there, but the waiting final has not looked yet
	assert.ErrorIs(t, b.Take(context.Background(), adapters.PriorityPreview, "edit", draw), adapters.ErrSkipped, "a preview never takes a waiting final's token")
	progress := make(chan error, 1)
	go func() { progress <- b.Take(ctx, adapters.PriorityProgress, "react", draw) }()
	waitingOn(t, b, "chat", adapters.PriorityProgress, 1)

	cancel()
	for _, ch := range []chan error{final, progress} {
		err := <-ch
		assert.ErrorIs(t, err, context.Canceled)
	}
	b.mu.Lock()
	assert.Equal(t, [3]int{}, b.buckets["chat"].waiting, "cancelled callers leave")
	b.mu.Unlock()
	assert.NoError(t, b.Take(context.Background(), adapters.PriorityPreview, "edit", draw), "with nobody waiting the token is free")
}

func TestAFinalWaitsForItsTokenThenGoes(t *testing.T) {
	b := New(time.Minute, 0)
	fast := Draw{Key: "chat", Rule: Rule{Every: 20 * time.Millisecond, Burst: 1}, Cost: 1}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for range 3 {
		require.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", fast))
	}
}

func TestARetryAfterHoldsEveryCall(t *testing.T) {
	b, c := atOnce()
	ctx := context.Background()
	b.Cool("chat", 7*time.Second)
	assert.Equal(t, 7*time.Second, b.CoolingDown("chat"))
	assert.ErrorIs(t, b.Take(ctx, adapters.PriorityPreview, "edit", chat(1)), adapters.ErrSkipped, "an edit honours the retry-after")
	assert.ErrorIs(t, b.Take(ctx, adapters.PriorityPreview, "typing", chat(0)), adapters.ErrSkipped, "so does a call that costs nothing")
	wait, limited := RateLimited(b.Take(ctx, adapters.PriorityFinal, "send", chat(1)))
	require.True(t, limited, "a final is not sent in the cooldown either")
	assert.GreaterOrEqual(t, wait, 7*time.Second, "and is told how long is left")
	b.Cool("chat", time.Second)
	assert.Equal(t, 7*time.Second, b.CoolingDown("chat"), "a shorter retry-after does not shorten a longer one")

	c.add(7 * time.Second)
	assert.Zero(t, b.CoolingDown("chat"))
	_, limited = RateLimited(b.Take(ctx, adapters.PriorityFinal, "send", chat(1)))
	assert.True(t, limited, "what the platform counted is spent: the bucket starts empty")
	c.add(time.Second)
	assert.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", chat(1)))
}

func TestADrawOnSeveralBucketsNeedsRoomInEach(t *testing.T) {
	b, _ := atOnce()
	ctx := context.Background()
	bot := Draw{Key: "bot", Rule: Rule{Every: time.Second, Burst: 3, Reserve: 1}, Cost: 1}
	for i := range 2 {
		require.NoError(t, b.Take(ctx, adapters.PriorityPreview, "edit", bot, Draw{Key: "chat" + strconv.Itoa(i), Rule: perSecond, Cost: 1}))
	}
	assert.ErrorIs(t, b.Take(ctx, adapters.PriorityPreview, "edit", bot, Draw{Key: "chat9", Rule: perSecond, Cost: 1}), adapters.ErrSkipped,
		"a fresh chat, but the bot's reserve")
	assert.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", bot, Draw{Key: "chat9", Rule: perSecond, Cost: 1}))
}

func TestTheBudgetKeepsAtMostItsBound(t *testing.T) {
	c := &clock{t: time.Unix(1_000_000, 0)}
	b := New(time.Second, 100)
	b.now = c.now
	ctx := context.Background()
	for i := range 1000 {
		require.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", Draw{Key: strconv.Itoa(i), Rule: perSecond, Cost: 1}))
		assert.LessOrEqual(t, b.Len(), 100)
	}
	c.add(time.Minute)
	require.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", Draw{Key: "new", Rule: perSecond, Cost: 1}))
	assert.Equal(t, 1, b.Len(), "buckets full again hold nothing and are all forgotten")
	b.Cool("cooling", time.Hour)
	for i := range 200 {
		require.NoError(t, b.Take(ctx, adapters.PriorityFinal, "send", Draw{Key: "x" + strconv.Itoa(i), Rule: perSecond, Cost: 1}))
	}
	assert.Positive(t, b.CoolingDown("cooling"), "a cooling bucket outlives idle ones… ")
	assert.LessOrEqual(t, b.Len(), 100)
}

func TestCancelledWaitIsTransient(t *testing.T) {
	b := New(time.Hour, 0)
	draw := Draw{Key: "chat", Rule: Rule{Every: time.Hour, Burst: 1}, Cost: 1}
	require.NoError(t, b.Take(context.Background(), adapters.PriorityFinal, "send", draw))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	err := b.Take(ctx, adapters.PriorityFinal, "send", draw)
	kind, _ := adapters.Classify(err)
	assert.Equal(t, adapters.Transient, kind)
	assert.True(t, errors.Is(err, context.Canceled))
}

// A send whose turn would come too near its caller's deadline is refused
// at once, as rate limited, rather than started late: a send the
// deadline cuts after the platform took it would be sent again. Any
// other call (a reaction, typing) waits up to its deadline.
func TestASendWhoseWaitWouldReachTheDeadlineIsRefusedAtOnce(t *testing.T) {
	b := New(time.Minute, 0)
	draw := Draw{Key: "chat", Rule: Rule{Every: 2 * time.Second, Burst: 1}, Cost: 1}
	require.NoError(t, b.Take(context.Background(), adapters.PriorityFinal, "send", draw))
	timed, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	ctx := adapters.WithSendMargin(timed, 2*time.Second)
	start := time.Now()
	err := b.Take(ctx, adapters.PriorityFinal, "send", draw)
	wait, limited := RateLimited(err)
	require.True(t, limited, "refused: a 2 s wait leaves less than the 2 s margin of 3 s: %v", err)
	assert.Less(t, time.Since(start), time.Second, "at once, not after waiting")
	assert.Greater(t, wait, time.Second, "and told when its turn comes")

	assert.NoError(t, b.Take(timed, adapters.PriorityFinal, "react", draw), "a call that is no send waits")

	roomy, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	assert.NoError(t, b.Take(adapters.WithSendMargin(roomy, 2*time.Second), adapters.PriorityFinal, "send", draw), "with time for the wait and the send, it waits")
}
