package activities

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// lastMoment is a platform whose send completes just as the attempt's
// context ends (its deadline): the message is out, the attempt is over.
type lastMoment struct {
	fakeOutbound
	mu     sync.Mutex
	end    context.CancelFunc
	posted int
}

func (l *lastMoment) Send(context.Context, pipeline.Delivery) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.posted++
	if l.end != nil {
		l.end()
	}
	return "p-first", nil
}

func TestAChunkSentAtTheAttemptsDeadlineIsInTheLedger(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	attempt, end := context.WithCancel(context.Background())
	defer end()
	out := &lastMoment{end: end}
	acts := &Activities{Store: db, Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	d := pipeline.Delivery{Session: session, IdempotencyKey: "session:webchat:room/t1/0", Text: "x", Total: 1}

	env := newActivityEnv(acts)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: attempt})
	_, _ = env.ExecuteActivity(acts.Deliver, d) // whatever the first attempt reports, the workflow may retry
	id, found, err := db.PlatformID(context.Background(), session.WorkflowID(), d.IdempotencyKey)
	require.NoError(t, err)
	assert.True(t, found, "the chunk that went out is recorded")
	assert.Equal(t, "p-first", id)

	// The durable retry, with the same key.
	v, err := newActivityEnv(acts).ExecuteActivity(acts.Deliver, d)
	require.NoError(t, err)
	var got pipeline.Delivered
	require.NoError(t, v.Get(&got))
	assert.Equal(t, "p-first", got.PlatformMessageID)
	assert.Equal(t, 1, out.posted, "the retry does not send the chunk again")
}

// The chunk that replaced a streamed preview (by editing it) is in the
// delivery ledger, as the preview's message: a retry edits nothing and
// sends nothing again.
func TestAChunkThatReplacedItsPreviewIsInTheLedger(t *testing.T) {
	db, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	out := &screen{}
	acts := &Activities{Store: db, Outbound: map[string]adapters.Outbound{"webchat": out}, Logger: slog.Default()}
	d := pipeline.Delivery{Session: session, IdempotencyKey: "session:webchat:room/t1/0", Text: "the answer", Total: 1, Replaces: "preview-1"}

	got := deliver(t, acts, d)
	assert.Equal(t, "preview-1", got.PlatformMessageID)
	id, found, err := db.PlatformID(context.Background(), session.WorkflowID(), d.IdempotencyKey)
	require.NoError(t, err)
	assert.True(t, found, "the chunk that replaced the preview is in the ledger")
	assert.Equal(t, "preview-1", id)

	again := deliver(t, acts, d)
	assert.Equal(t, "preview-1", again.PlatformMessageID)
	assert.Len(t, out.edits, 1, "the retry finds it in the ledger")
	assert.Empty(t, out.posted)
}

// lastMomentScreen is a screen whose first send completes just as the
// attempt's context ends.
type lastMomentScreen struct {
	screen
	end context.CancelFunc
}

func (l *lastMomentScreen) Send(ctx context.Context, d pipeline.Delivery) (string, error) {
	id, err := l.screen.Send(ctx, d)
	l.end()
	return id, err
}

// A streamed block sent as the attempt ends is recorded all the same:
// the attempt after it continues after the block instead of sending it
// again.
func TestABlockSentAtTheAttemptsEndIsRecorded(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "s.db"))
	require.NoError(t, err)
	defer db.Close()
	attempt, end := context.WithCancel(context.Background())
	defer end()
	out := &lastMomentScreen{end: end}
	acts := streamingActs(out, &writer{words: paragraphs(6), pace: time.Millisecond}, pipeline.StreamBlocks)
	acts.Store = db
	env := newActivityEnv(acts)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: attempt})
	_, err = env.ExecuteActivity(acts.AgentTurn, streamReq)
	require.Error(t, err, "the attempt ended after its first block")
	require.Len(t, out.posted, 1)

	data, err := db.Shown(ctx, session.WorkflowID(), shownKey(streamReq))
	require.NoError(t, err)
	var shown pipeline.Shown
	require.NoError(t, json.Unmarshal([]byte(data), &shown), "recorded: %q", data)
	assert.Equal(t, []string{"msg-1"}, shown.Blocks)
}
