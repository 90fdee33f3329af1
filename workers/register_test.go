package workers

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/pipeline"
)

type signalled struct {
	session pipeline.SessionKey
	tick    pipeline.HeartbeatTick
}

type recordingSignaler struct{ got []signalled }

func (r *recordingSignaler) Heartbeat(_ context.Context, session pipeline.SessionKey, tick pipeline.HeartbeatTick) error {
	r.got = append(r.got, signalled{session, tick})
	return nil
}

// TestRegisterWiresTheHeartbeatTickToItsActivity runs the registered tick
// workflow against the registered activity, by their contract names.
func TestRegisterWiresTheHeartbeatTickToItsActivity(t *testing.T) {
	sessions := &recordingSignaler{}
	checklist := filepath.Join(t.TempDir(), "HEARTBEAT.md")
	require.NoError(t, os.WriteFile(checklist, []byte("- anything overdue?\n"), 0o600))
	acts := &activities.Activities{Heartbeats: &activities.Heartbeats{Sessions: sessions, ChecklistFile: checklist}}
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	Register(env, acts)
	env.SetStartWorkflowOptions(client.StartWorkflowOptions{ID: "heartbeat-tick:session:webchat:demo-2026-01-02T08:30:00Z"})

	key := pipeline.SessionKey{Channel: "webchat", Chat: "demo"}
	env.ExecuteWorkflow(pipeline.WorkflowHeartbeatTick, pipeline.HeartbeatTickParams{Session: key})
	require.NoError(t, env.GetWorkflowError())
	require.Len(t, sessions.got, 1)
	assert.Equal(t, key, sessions.got[0].session)
	assert.Equal(t, "heartbeat-tick:session:webchat:demo-2026-01-02T08:30:00Z", sessions.got[0].tick.ID)

	// The checklist, as the session will ask for it.
	probeEnv := suite.NewTestWorkflowEnvironment()
	Register(probeEnv, acts)
	probeEnv.RegisterWorkflowWithOptions(func(ctx workflow.Context) (string, error) {
		ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: time.Second})
		var text string
		err := workflow.ExecuteActivity(ctx, pipeline.ActivityReadHeartbeatChecklist, key).Get(ctx, &text)
		return text, err
	}, workflow.RegisterOptions{Name: "probe"})
	probeEnv.ExecuteWorkflow("probe")
	require.NoError(t, probeEnv.GetWorkflowError())
	var text string
	require.NoError(t, probeEnv.GetWorkflowResult(&text))
	assert.Equal(t, "- anything overdue?", text)
}
