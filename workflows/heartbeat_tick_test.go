package workflows

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// tickEnv runs the tick workflow with the signal activity answered by
// signal, which sees every attempt.
func tickEnv(id string, signal func(pipeline.HeartbeatSignal) error) (*testsuite.TestWorkflowEnvironment, *[]pipeline.HeartbeatSignal) {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetStartTime(tickStart)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: id})
	env.RegisterWorkflowWithOptions(HeartbeatTickWorkflow, workflow.RegisterOptions{Name: pipeline.WorkflowHeartbeatTick})
	var mu sync.Mutex
	var calls []pipeline.HeartbeatSignal
	env.RegisterActivityWithOptions(func(_ context.Context, sig pipeline.HeartbeatSignal) error {
		mu.Lock()
		calls = append(calls, sig)
		mu.Unlock()
		return signal(sig)
	}, activity.RegisterOptions{Name: pipeline.ActivitySignalHeartbeat})
	return env, &calls
}

// tickStart is when the tick tests' simulated clock starts.
var tickStart = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

var tickSession = pipeline.SessionKey{Channel: "telegram", Account: "bot", Chat: "-100"}

func TestHeartbeatTickSignalsTheSessionOnceWithItsOwnID(t *testing.T) {
	id := pipeline.HeartbeatTickID(tickSession) + "-2026-03-01T08:30:00Z"
	env, calls := tickEnv(id, func(pipeline.HeartbeatSignal) error { return nil })
	scheduled := time.Date(2026, 3, 1, 8, 30, 0, 0, time.UTC)
	require.NoError(t, env.SetTypedSearchAttributesOnStart(temporal.NewSearchAttributes(attrScheduledStart.ValueSet(scheduled))))

	env.ExecuteWorkflow(pipeline.WorkflowHeartbeatTick, pipeline.HeartbeatTickParams{Session: tickSession})
	require.True(t, env.IsWorkflowCompleted())
	require.NoError(t, env.GetWorkflowError())
	assert.Equal(t, []pipeline.HeartbeatSignal{{
		Session: tickSession,
		Tick:    pipeline.HeartbeatTick{ID: id, ScheduledAt: scheduled},
	}}, *calls)
}

func TestHeartbeatTickStartedByHandUsesItsStartTime(t *testing.T) {
	env, calls := tickEnv("heartbeat-tick:by-hand", func(pipeline.HeartbeatSignal) error { return nil })
	env.ExecuteWorkflow(pipeline.WorkflowHeartbeatTick, pipeline.HeartbeatTickParams{Session: tickSession})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, *calls, 1)
	assert.Equal(t, "heartbeat-tick:by-hand", (*calls)[0].Tick.ID)
	assert.True(t, (*calls)[0].Tick.ScheduledAt.Equal(tickStart), "got %s", (*calls)[0].Tick.ScheduledAt)
}

func TestHeartbeatTickRetriesTheSignalWithTheSameTick(t *testing.T) {
	failures := 3
	env, calls := tickEnv("heartbeat-tick:retried", func(pipeline.HeartbeatSignal) error {
		if failures > 0 {
			failures--
			return errors.New("frontend unavailable")
		}
		return nil
	})
	env.ExecuteWorkflow(pipeline.WorkflowHeartbeatTick, pipeline.HeartbeatTickParams{Session: tickSession})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, *calls, 4, "three failures, then the signal")
	for _, c := range *calls {
		assert.Equal(t, (*calls)[0], c, "every attempt carries the same tick")
	}
}

func TestHeartbeatTickGivesUpOnAStaleTick(t *testing.T) {
	env, calls := tickEnv("heartbeat-tick:down", func(pipeline.HeartbeatSignal) error { return errors.New("down") })
	env.ExecuteWorkflow(pipeline.WorkflowHeartbeatTick, pipeline.HeartbeatTickParams{Session: tickSession})
	require.True(t, env.IsWorkflowCompleted())
	require.Error(t, env.GetWorkflowError(), "the tick fails; the schedule goes on (PauseOnFailure is off)")
	assert.Less(t, env.Now().Sub(tickStart), 3*time.Minute, "within its two-minute budget, in simulated time")
	assert.Greater(t, len(*calls), 3)
}
