package activities

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// slowLedger is a store whose ledger write takes a while (a busy SQLite
// file, a PostgreSQL pool whose connections are all taken).
type slowLedger struct {
	*store.Store
	delay time.Duration
}

func (s slowLedger) MapMessage(ctx context.Context, sid, iid, pid string) error {
	time.Sleep(s.delay)
	return s.Store.MapMessage(ctx, sid, iid, pid)
}

// countingPlatform counts its posts; sent hears of each, and failing
// makes a post fail before the platform takes it.
type countingPlatform struct {
	fakeOutbound
	posts   atomic.Int32
	sent    chan struct{}
	failing atomic.Bool
}

func (c *countingPlatform) Send(ctx context.Context, d pipeline.Delivery) (string, error) {
	if c.failing.Load() {
		return "", &adapters.Error{Kind: adapters.Transient, Op: "send", Err: errors.New("connection reset")}
	}
	c.posts.Add(1)
	select {
	case c.sent <- struct{}{}:
	default:
	}
	return "m-1", nil
}

func claimTestStore(t *testing.T) *store.Store {
	t.Helper()
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// The first chunk's local activity is given up at its deadline while its
// goroutine still records the send; the session's Deliver activity that
// follows, on any worker, finds the claim and waits it out instead of
// posting the chunk again.
func TestADeliveryThatFindsAnotherAttemptSendingTheChunkWaitsItOut(t *testing.T) {
	out := &countingPlatform{sent: make(chan struct{}, 1)}
	acts := &Activities{Store: slowLedger{claimTestStore(t), 300 * time.Millisecond}, Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	d := pipeline.Delivery{Session: session, IdempotencyKey: "session:webchat:room/t1/0", Text: "x", Total: 1}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _, _ = acts.Deliver(context.Background(), d) }() // the local activity
	<-out.sent

	_, err := acts.Deliver(context.Background(), d) // the activity after its timeout
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr, "the second attempt is refused while the first holds the claim")
	assert.Equal(t, errDeliveryInFlight, appErr.Type())
	assert.False(t, appErr.NonRetryable(), "and retried")
	assert.Positive(t, appErr.NextRetryDelay(), "after the claim")

	wg.Wait()
	got, err := acts.Deliver(context.Background(), d) // its retry
	require.NoError(t, err)
	assert.Equal(t, "m-1", got.PlatformMessageID, "the retry reports the first attempt's message")
	assert.Equal(t, int32(1), out.posts.Load(), "one chunk, one post")
}

// A send that failed gives its claim back: the retry sends at once.
func TestAFailedSendGivesItsClaimBack(t *testing.T) {
	out := &countingPlatform{sent: make(chan struct{}, 1)}
	acts := &Activities{Store: claimTestStore(t), Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	d := pipeline.Delivery{Session: session, IdempotencyKey: "session:webchat:room/t2/0", Text: "x", Total: 1}
	out.failing.Store(true)
	_, err := acts.Deliver(context.Background(), d)
	require.Error(t, err)
	out.failing.Store(false)
	got, err := acts.Deliver(context.Background(), d)
	require.NoError(t, err, "no claim left behind to wait for")
	assert.Equal(t, "m-1", got.PlatformMessageID)
	assert.Equal(t, int32(1), out.posts.Load())
}
