package activities

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// silentModel answers once the attempt has heartbeated want times, or
// after giveUp without them, and says nothing meanwhile (no streamed
// tokens): a model that thinks for longer than the heartbeat timeout.
type silentModel struct {
	heartbeats *atomic.Int32
	want       int32
	giveUp     time.Duration
	calls      atomic.Int32
}

func (*silentModel) Name() string { return "test/silent" }

func (m *silentModel) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	m.calls.Add(1)
	deadline := time.After(m.giveUp)
	for m.heartbeats.Load() < m.want {
		select {
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		case <-deadline:
			return models.Completion{Text: "thought it through"}, nil
		case <-time.After(10 * time.Millisecond):
		}
	}
	return models.Completion{Text: "thought it through"}, nil
}

// A model that takes twice the heartbeat timeout to answer is one call
// that succeeds, not a lost worker: the attempt heartbeats while the
// model call blocks, on the SDK's real heartbeat-timeout check.
func TestAModelSlowerThanTheHeartbeatTimeoutIsAskedOnce(t *testing.T) {
	const heartbeatTimeout = 2 * time.Second
	var heartbeats atomic.Int32
	// The attempt heartbeats every third of the timeout, and the SDK
	// sends one every 0.8 of it (its throttle): the third one sent comes
	// about two timeouts into the call.
	model := &silentModel{heartbeats: &heartbeats, want: 3, giveUp: 4 * heartbeatTimeout}
	acts := &Activities{Models: only{model}, Outbound: map[string]adapters.Outbound{"webchat": &fakeOutbound{}}, Logger: slog.Default()}

	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(time.Minute) // the heartbeat timeout decides, not the test's idle timeout
	env.RegisterActivity(acts)
	env.SetOnActivityHeartbeatListener(func(*activity.Info, converter.EncodedValues) { heartbeats.Add(1) })
	turn := func(ctx workflow.Context) (pipeline.TurnResult, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
			StartToCloseTimeout: time.Minute,
			HeartbeatTimeout:    heartbeatTimeout,
			RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 1},
		})
		var res pipeline.TurnResult
		err := workflow.ExecuteActivity(ctx, acts.AgentTurn, pipeline.TurnRequest{Session: session, Model: "test/silent", Messages: []pipeline.TurnMessage{{Text: "think hard"}}}).Get(ctx, &res)
		return res, err
	}
	env.RegisterWorkflow(turn)
	started := time.Now()
	env.ExecuteWorkflow(turn)

	require.NoError(t, env.GetWorkflowError(), "the model's call outlived the heartbeat timeout by heartbeating")
	var res pipeline.TurnResult
	require.NoError(t, env.GetWorkflowResult(&res))
	assert.Equal(t, "thought it through", res.Reply)
	assert.Equal(t, int32(1), model.calls.Load(), "the model was asked once")
	assert.Greater(t, time.Since(started), heartbeatTimeout, "the call lasted longer than the heartbeat timeout")
}
