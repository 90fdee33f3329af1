package connect

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errRefused = errors.New("refused")

func TestUntilReturnsThePermanentErrorAfterReportingTheOthers(t *testing.T) {
	var reported []int
	calls := 0
	err := Until(context.Background(), func() error {
		calls++
		if calls == 1 {
			return errors.New("unreachable")
		}
		return errRefused
	}, func(err error) (bool, time.Duration) { return errors.Is(err, errRefused), 0 },
		func(n int, next time.Time, err error) { reported = append(reported, n) })
	require.ErrorIs(t, err, errRefused)
	assert.Equal(t, 2, calls)
	assert.Equal(t, []int{1}, reported, "only the transient failure is reported before a wait")
}

func TestUntilStopsWaitingWhenTheContextIsDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	err := Until(ctx, func() error { return errors.New("unreachable") },
		func(error) (bool, time.Duration) { return false, time.Hour },
		func(n int, next time.Time, err error) {
			assert.GreaterOrEqual(t, time.Until(next), 59*time.Minute, "a Retry-After longer than the backoff is honoured")
			cancel()
		})
	require.ErrorIs(t, err, context.Canceled)
}

func TestUntilReturnsNilOnSuccess(t *testing.T) {
	require.NoError(t, Until(context.Background(), func() error { return nil },
		func(error) (bool, time.Duration) { return true, 0 },
		func(int, time.Time, error) { t.Error("no failure to report") }))
}
