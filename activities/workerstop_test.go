package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"

	"github.com/replyflow/replyflow/pipeline"
)

// stoppingWorker runs an attempt on a worker that can be stopped: stop
// closes the worker's stop channel, then cancels the activity's context,
// as the SDK does when the shutdown grace runs out.
type stoppingWorker struct {
	stopCh chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
}

func newStoppingWorker(t *testing.T) *stoppingWorker {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return &stoppingWorker{stopCh: make(chan struct{}), ctx: ctx, cancel: cancel}
}

func (w *stoppingWorker) stop() {
	close(w.stopCh)
	w.cancel()
}

func (w *stoppingWorker) run(t *testing.T, acts *Activities, req pipeline.TurnRequest) *temporal.ApplicationError {
	t.Helper()
	env := newActivityEnv(acts)
	env.SetWorkerOptions(worker.Options{BackgroundActivityContext: w.ctx})
	env.SetWorkerStopChannel(w.stopCh)
	_, err := env.ExecuteActivity(acts.AgentTurn, req)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app, "the attempt fails with a typed error: %v", err)
	return app
}

func TestAWorkerStoppingMidStreamIsNotTheModelsFault(t *testing.T) {
	w := newStoppingWorker(t)
	out := &screen{}
	acts := streamingActs(out, &writer{words: words(40, "word"), pace: 10 * time.Millisecond, cancelAfter: 20, cancel: w.stop}, pipeline.StreamPreview)
	app := w.run(t, acts, streamReq)
	assert.Equal(t, pipeline.ErrWorkerStopped, app.Type(), "no model error type: the model did nothing wrong")
	assert.True(t, app.NonRetryable(), "the workflow, not the retry policy, asks the same model again")
	var shown pipeline.Shown
	require.NoError(t, app.Details(&shown), "the next attempt must know what is on screen")
	assert.Equal(t, "msg-1", shown.PreviewID)
	assert.Contains(t, app.Error(), "session:webchat:room")
}

func TestAWorkerStoppingBeforeAnythingShowedIsNotTheModelsFault(t *testing.T) {
	w := newStoppingWorker(t)
	acts := streamingActs(&screen{}, &writer{words: words(40, "word"), pace: 10 * time.Millisecond, cancelAfter: 2, cancel: w.stop}, pipeline.StreamOff)
	app := w.run(t, acts, pipeline.TurnRequest{Session: session, TurnID: "t1", Text: "hi"})
	assert.Equal(t, pipeline.ErrWorkerStopped, app.Type())
	assert.True(t, app.NonRetryable())
}

// A provider that times out while the worker is stopping (its grace not
// yet spent) is still the provider's timeout.
func TestAProviderTimeoutStaysATimeoutWhileTheWorkerStops(t *testing.T) {
	for _, stopping := range []bool{false, true} {
		w := newStoppingWorker(t)
		if stopping {
			close(w.stopCh)
		}
		acts := streamingActs(&screen{}, &writer{words: words(30, "word"), pace: 10 * time.Millisecond, failAfter: 20}, pipeline.StreamPreview)
		app := w.run(t, acts, streamReq)
		assert.Equal(t, pipeline.ErrTimeout, app.Type(), "worker stopping: %v", stopping)
	}
}
