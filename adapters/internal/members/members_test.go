package members

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/pipeline"
)

// clock is real time plus what a test skipped ahead.
type clock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *clock) Skip(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

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

func TestCountIsTheMembersLessTheBotCachedAMinute(t *testing.T) {
	c := &clock{}
	a := &asker{calls: map[string]int{}, members: 5}
	m := New(a.ask, c.Now, true)
	got, err := m.Count(t.Context(), "G1")
	require.NoError(t, err)
	assert.Equal(t, 4, got.Humans)
	assert.True(t, got.Truncated, "approximate and counting bots: a floor, not ground truth")
	assert.WithinDuration(t, c.Now(), got.FetchedAt, time.Second)
	a.members = 6
	again, _ := m.Count(t.Context(), "G1")
	assert.Equal(t, 4, again.Humans)
	assert.Equal(t, 1, a.asked("G1"), "cached")
	c.Skip(pipeline.MembershipFreshness + time.Second)
	fresh, _ := m.Count(t.Context(), "G1")
	assert.Equal(t, 5, fresh.Humans)
	assert.Equal(t, 2, a.asked("G1"))
}

func TestAFailedMemberCountIsNotAskedOnEveryMessage(t *testing.T) {
	c := &clock{}
	a := &asker{calls: map[string]int{}, failing: true}
	m := New(a.ask, c.Now, true)
	got, err := m.Count(t.Context(), "G1")
	assert.Nil(t, got)
	require.Error(t, err)
	got, err = m.Count(t.Context(), "G1")
	assert.Nil(t, got)
	assert.NoError(t, err, "the failure was reported once")
	assert.Equal(t, 1, a.asked("G1"))
}

func TestCallersOfOneKeyShareOneLookup(t *testing.T) {
	a := &asker{calls: map[string]int{}, members: 3, gate: make(chan struct{})}
	m := New(a.ask, time.Now, true)
	results := make(chan *pipeline.MembershipCount, 3)
	count := func() {
		got, _ := m.Count(t.Context(), "G1")
		results <- got
	}
	go count()
	waitUntil(t, "the first lookup", func() bool { return a.asked("G1") == 1 })
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
	assert.Equal(t, 1, a.asked("G1"))
}

// waitUntil polls cond until it holds, for what no fake can wake a
// waiter on.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, 10*time.Second)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestACountIsGroundTruthUnlessTruncated(t *testing.T) {
	a := &asker{calls: map[string]int{}, members: 7}
	got, err := New(a.ask, time.Now, false).Count(t.Context(), "C1")
	require.NoError(t, err)
	assert.Equal(t, 6, got.Humans)
	assert.False(t, got.Truncated)
}

func TestTheCacheIsBounded(t *testing.T) {
	m := New(func(context.Context, string) (int, error) { return 1, nil }, time.Now, false)
	for i := range MaxKeys + 10 {
		_, err := m.Count(t.Context(), strconv.Itoa(i))
		require.NoError(t, err)
	}
	assert.Len(t, m.entries, MaxKeys)
	assert.Len(t, m.order, MaxKeys)
}
