package changes

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestWaitForWakesOnTouchAndGivesUpWithItsContext(t *testing.T) {
	var f Feed
	var done atomic.Bool
	started := make(chan struct{})
	go func() {
		<-started
		done.Store(true)
		f.Touch()
	}()
	waited, cancelWait := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancelWait()
	require.NoError(t, f.WaitFor(waited, "test", func() bool {
		select {
		case <-started:
		default:
			close(started) // the condition is false at least once
		}
		return done.Load()
	}))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorContains(t, f.WaitFor(ctx, "test", func() bool { return false }), "test: condition not met")
}
