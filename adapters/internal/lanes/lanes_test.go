package lanes

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestEachLaneRunsInOrderAndLanesRunAtOnce(t *testing.T) {
	l := New(4, 100)
	var mu sync.Mutex
	got := map[string][]int{}
	release := make(chan struct{})
	started := make(chan string, 10)
	ctx := context.Background()
	for i := range 5 {
		for _, key := range []string{"a", "b"} {
			require.NoError(t, l.Go(ctx, key, func() {
				if i == 0 {
					started <- key
					<-release // both lanes' first jobs are held at once
				}
				mu.Lock()
				got[key] = append(got[key], i)
				mu.Unlock()
			}))
		}
	}
	seen := map[string]bool{}
	for range 2 {
		select {
		case k := <-started:
			seen[k] = true
		case <-time.After(10 * time.Second):
			t.Fatal("the two lanes did not run at once")
		}
	}
	close(release)
	l.Wait()
	assert.Equal(t, map[string]bool{"a": true, "b": true}, seen)
	assert.Equal(t, []int{0, 1, 2, 3, 4}, got["a"])
	assert.Equal(t, []int{0, 1, 2, 3, 4}, got["b"])
}

// With two lanes, a third key's job starts only once one of the two
// running has finished.
func TestAtMostLanesRunAtOnce(t *testing.T) {
	l := New(2, 100)
	var mu sync.Mutex
	running, most, started := 0, 0, 0
	release := make(chan struct{})
	changed := make(chan struct{}, 10)
	ctx := context.Background()
	for _, key := range []string{"a", "b", "c"} {
		require.NoError(t, l.Go(ctx, key, func() {
			mu.Lock()
			running++
			started++
			most = max(most, running)
			mu.Unlock()
			changed <- struct{}{}
			<-release
			mu.Lock()
			running--
			mu.Unlock()
		}))
	}
	waitStarted := func(n int) {
		t.Helper()
		for {
			mu.Lock()
			s := started
			mu.Unlock()
			if s >= n {
				return
			}
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatalf("%d jobs started, want %d", s, n)
			}
		}
	}
	waitStarted(2)
	release <- struct{}{} // one of the two ends: the third may start
	waitStarted(3)
	close(release)
	l.Wait()
	assert.Equal(t, 2, most, "never three at once")
}

func TestAFullQueueHoldsTheCallerUntilItsContextEnds(t *testing.T) {
	l := New(1, 2)
	hold := make(chan struct{})
	defer close(hold)
	ctx := context.Background()
	require.NoError(t, l.Go(ctx, "a", func() { <-hold }))
	require.NoError(t, l.Go(ctx, "a", func() {}))
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := l.Go(short, "b", func() { t.Error("a job past the bound ran") })
	require.ErrorIs(t, err, context.DeadlineExceeded)
}
