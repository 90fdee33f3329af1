package discord

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// asker counts lookups; it answers members, or fails while failing is set.
type asker struct {
	mu      sync.Mutex
	calls   map[string]int
	members int
	failing bool
	gate    chan struct{} // when set, each lookup waits for it
}

func (a *asker) ask(ctx context.Context, guild string) (int, error) {
	a.mu.Lock()
	a.calls[guild]++
	gate, failing, n := a.gate, a.failing, a.members
	a.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if failing {
		return 0, errors.New("403 Missing Access")
	}
	return n, nil
}

func (a *asker) asked(guild string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.calls[guild]
}

func TestMemberCountIsTheGuildLessTheBotCachedAMinute(t *testing.T) {
	c := &clock{}
	a := &asker{calls: map[string]int{}, members: 5}
	m := newMemberCounter(a.ask, c.Now)
	got, err := m.count(t.Context(), guildID)
	require.NoError(t, err)
	assert.Equal(t, 4, got.Humans)
	assert.True(t, got.Truncated, "approximate and counting bots: a floor, not ground truth")
	assert.WithinDuration(t, c.Now(), got.FetchedAt, time.Second)
	a.members = 6
	again, _ := m.count(t.Context(), guildID)
	assert.Equal(t, 4, again.Humans)
	assert.Equal(t, 1, a.asked(guildID), "cached")
	c.Skip(pipeline.MembershipFreshness + time.Second)
	fresh, _ := m.count(t.Context(), guildID)
	assert.Equal(t, 5, fresh.Humans)
	assert.Equal(t, 2, a.asked(guildID))
}

func TestAFailedMemberCountIsNotAskedOnEveryMessage(t *testing.T) {
	c := &clock{}
	a := &asker{calls: map[string]int{}, failing: true}
	m := newMemberCounter(a.ask, c.Now)
	got, err := m.count(t.Context(), guildID)
	assert.Nil(t, got)
	require.Error(t, err)
	got, err = m.count(t.Context(), guildID)
	assert.Nil(t, got)
	assert.NoError(t, err, "the failure was reported once")
	assert.Equal(t, 1, a.asked(guildID))
}

func TestChannelsOfOneGuildShareOneLookup(t *testing.T) {
	a := &asker{calls: map[string]int{}, members: 3, gate: make(chan struct{})}
	m := newMemberCounter(a.ask, time.Now)
	results := make(chan *pipeline.MembershipCount, 3)
	count := func() {
		got, _ := m.count(t.Context(), guildID)
		results <- got
	}
	go count()
	waitUntil(t, "the first lookup", func() bool { return a.asked(guildID) == 1 })
	go count()
	go count()
	waitUntil(t, "two callers waiting for it", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.waiting == 2
	})
	close(a.gate)
	for range 3 {
		got := <-results
		require.NotNil(t, got)
		assert.Equal(t, 2, got.Humans)
	}
	assert.Equal(t, 1, a.asked(guildID))
}

// waitUntil polls cond until it holds, for what no fake can wake a
// waiter on.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(testWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, testWait)
		}
		time.Sleep(time.Millisecond)
	}
}
