package retiring

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/pipeline"
)

// deliveryAttempt is one call of the Deliver activity, failed or not.
type deliveryAttempt struct {
	pipeline.Delivery
	Local bool // a local activity (the first chunk's fast path)
	Err   error
}

// attemptLog records every Deliver attempt, and answers each as
// answer says.
type attemptLog struct {
	mu       sync.Mutex
	attempts []deliveryAttempt
	answer   func(n int, d pipeline.Delivery, local bool) (pipeline.Delivered, error)
}

func (l *attemptLog) deliver(ctx context.Context, d pipeline.Delivery) (pipeline.Delivered, error) {
	local := activity.GetInfo(ctx).IsLocalActivity
	l.mu.Lock()
	defer l.mu.Unlock()
	out, err := l.answer(len(l.attempts), d, local)
	l.attempts = append(l.attempts, deliveryAttempt{Delivery: d, Local: local, Err: err})
	return out, err
}

func (l *attemptLog) all() []deliveryAttempt {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]deliveryAttempt(nil), l.attempts...)
}

// withAttemptLog routes the session's deliveries (local and regular
// activities) through log.
func withAttemptLog(t *testing.T, log *attemptLog, options ...func(*fakePlatform)) *testsuite.TestWorkflowEnvironment {
	env, _ := newEnv(t, options...)
	env.OnActivity(pipeline.ActivityDeliver, mock.Anything, mock.Anything).Return(log.deliver)
	return env
}

// The first chunk goes out in a local activity; when that attempt fails,
// its durable retry (a Deliver activity) must carry the same idempotency
// key and the same preview to replace: otherwise a chunk that did reach
// the platform is sent again under another key, or a preview is left
// beside its copy.
func TestAFirstChunkRetriedDurablyKeepsItsIdempotencyKey(t *testing.T) {
	log := &attemptLog{answer: func(n int, d pipeline.Delivery, _ bool) (pipeline.Delivered, error) {
		if n == 0 {
			return pipeline.Delivered{}, errors.New("deadline exceeded as the platform answered")
		}
		return pipeline.Delivered{PlatformMessageID: fmt.Sprintf("bot-%d-%d", d.Index, n)}, nil
	}}
	env := withAttemptLog(t, log, func(p *fakePlatform) {
		p.settings.ChunkLimit = 16
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{Reply: "a reply long enough for two chunks", Model: req.Model,
				Shown: &pipeline.Shown{Mode: pipeline.StreamPreview, PreviewID: "preview-1", Text: "a reply long"}}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	run(t, env, nil)

	attempts := log.all()
	require.GreaterOrEqual(t, len(attempts), 3, "the failed local attempt, its retry, and the next chunk")
	first, retry := attempts[0], attempts[1]
	require.True(t, first.Local, "the first chunk's first attempt is the local activity")
	require.Error(t, first.Err)
	require.False(t, retry.Local, "the retry is a durable activity")
	require.Equal(t, 0, retry.Index, "the retry is the same chunk")
	assert.Equal(t, first.IdempotencyKey, retry.IdempotencyKey, "the same chunk, the same key")
	assert.NotEmpty(t, first.IdempotencyKey)
	assert.Equal(t, first.Replaces, retry.Replaces, "the same preview to replace")
	assert.Equal(t, first.Text, retry.Text)
	keys := map[string]int{}
	for _, a := range attempts {
		if a.Err == nil {
			keys[a.IdempotencyKey]++
		}
	}
	for key, n := range keys {
		assert.Equal(t, 1, n, "chunk %s delivered once", key)
	}
}

// The chunk that replaced the preview is in the session's delivery
// ledger with the message the delivery reported: the preview itself when
// it was edited, the new message when the preview was gone and the chunk
// was sent anew.
func TestAChunkThatReplacedThePreviewIsInTheLedger(t *testing.T) {
	for name, reported := range map[string]string{"edited": "preview-1", "preview gone": "new-message"} {
		t.Run(name, func(t *testing.T) {
			log := &attemptLog{answer: func(n int, d pipeline.Delivery, _ bool) (pipeline.Delivered, error) {
				if d.Replaces != "" {
					return pipeline.Delivered{PlatformMessageID: reported}, nil
				}
				return pipeline.Delivered{PlatformMessageID: fmt.Sprintf("bot-%d", d.Index)}, nil
			}}
			env := withAttemptLog(t, log, func(p *fakePlatform) {
				p.settings.ChunkLimit = 16
				p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
					return pipeline.TurnResult{Reply: "a reply long enough for two chunks", Model: req.Model,
						Shown: &pipeline.Shown{Mode: pipeline.StreamPreview, PreviewID: "preview-1", Text: "a reply long"}}, nil
				}
			})
			signalAt(env, time.Second, inbound("m1", "hi"))
			after := queryStateAt(t, env, time.Minute)
			run(t, env, nil)

			attempts := log.all()
			require.NotEmpty(t, attempts)
			require.Equal(t, "preview-1", attempts[0].Replaces)
			require.NotEmpty(t, after.Deliveries)
			var chunks []int
			for _, r := range after.Deliveries {
				chunks = append(chunks, r.Chunk)
			}
			require.Contains(t, chunks, 0, "the chunk that replaced the preview is in the ledger: %+v", after.Deliveries)
			for _, r := range after.Deliveries {
				if r.Chunk == 0 {
					assert.Equal(t, reported, r.PlatformMessageID, "the message the delivery reported")
				} else {
					assert.Equal(t, fmt.Sprintf("bot-%d", r.Chunk), r.PlatformMessageID)
				}
			}
			assert.Len(t, after.Deliveries, len(attempts), "each chunk once")
		})
	}
}
