package retiring

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/pipeline"
)

func TestParkedDeliveryResumesOnRetryWithTheMissingChunksOnly(t *testing.T) {
	refusing := true
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.ChunkLimit = 20
		p.refuse = func(d pipeline.Delivery) error {
			if refusing && d.Index == 1 {
				return errors.New("platform down")
			}
			return nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "alpha beta gamma delta epsilon zeta eta theta"))
	parked := queryStateAt(t, env, 15*time.Minute)
	// A retry while the platform is still down parks the turn again.
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalRetry, RetryRequest{By: "too early"}) }, 5*time.Minute)
	env.RegisterDelayedCallback(func() {
		refusing = false
		env.SignalWorkflow(SignalRetry, RetryRequest{By: "operator", Reason: "platform is back"})
	}, 20*time.Minute)
	run(t, env, nil)

	require.Len(t, p.sent, 3, "each chunk delivered exactly once")
	for i, s := range p.sent {
		assert.Equal(t, i, s.Index, "in order")
	}
	assert.Equal(t, 20*time.Minute, p.sent[1].At, "chunk 2 went out on the retry")
	assert.Greater(t, p.attempts, 5, "the refused chunk was retried until its deadline")

	assert.Equal(t, StatusDeliveryFailed, parked.Status)
	require.NotNil(t, parked.Active)
	assert.Equal(t, PhaseParked, parked.Active.Phase)
	assert.Equal(t, "delivery_failed", parked.LastTurn.Outcome)
	assert.Contains(t, parked.LastTurn.Error, "delivery of chunk 2/3 failed")
	assert.Equal(t, []pipeline.ReactionState{pipeline.ReactionError, pipeline.ReactionNone, pipeline.ReactionDone, pipeline.ReactionNone}, p.statesOf("m1"),
		"❌ when parked (not sent again when parked again), cleared after the error delay, ✅ once delivered, then cleared")
}

func TestPermanentPlatformErrorParksAtOnce(t *testing.T) {
	refusing := true
	env, p := newEnv(t, func(p *fakePlatform) {
		p.refuse = func(pipeline.Delivery) error {
			if refusing {
				return temporal.NewNonRetryableApplicationError("chat not found", "PlatformRejected", nil)
			}
			return nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "hi"))
	parked := queryStateAt(t, env, 2*time.Second)
	env.RegisterDelayedCallback(func() {
		refusing = false
		env.SignalWorkflow(SignalRetry, RetryRequest{})
	}, time.Hour)
	run(t, env, nil)

	assert.Equal(t, 2, p.attempts, "one refused attempt, one on retry")
	assert.Equal(t, StatusDeliveryFailed, parked.Status)
	require.Len(t, p.sent, 1)
	assert.Equal(t, time.Hour, p.sent[0].At)
}

func TestRetryWithNothingParkedChangesNothing(t *testing.T) {
	env, p := newEnv(t)
	signalAt(env, time.Second, inbound("m1", "hi"))
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(SignalRetry, RetryRequest{By: "operator"}) }, 10*time.Second)
	run(t, env, nil)
	assert.Len(t, p.sent, 1)
	assert.Equal(t, 1, p.attempts)
}

// A run that took the hardening change delivers with the fence-safe
// chunker; ChunkV1 stays only for runs that replay with it.
func TestRepliesAreChunkedWithTheFenceSafeChunker(t *testing.T) {
	reply := "Here:\n~~~go\n" + strings.Repeat("fmt.Println(\"line\")\n", 6) + "~~~\nDone."
	require.NotEqual(t, pipeline.ChunkV1(reply, 60), pipeline.Chunk(reply, 60), "the reply must be one the two chunkers split differently")
	env, p := newEnv(t, func(p *fakePlatform) {
		p.settings.ChunkLimit = 60
		p.agent = func(req pipeline.TurnRequest) (pipeline.TurnResult, error) {
			return pipeline.TurnResult{Reply: reply, Model: req.Model}, nil
		}
	})
	signalAt(env, time.Second, inbound("m1", "show me"))
	run(t, env, nil)

	assert.Equal(t, pipeline.Chunk(reply, 60), p.replies())
}
