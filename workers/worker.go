package workers

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// DefaultTaskQueue is where session workflows and their activities run.
const DefaultTaskQueue = "replyflow"

// New builds a worker that serves session workflows and their activities on
// taskQueue. The caller starts and stops it. It polls with more pollers
// than the SDK's two: with many sessions at once, two left tasks waiting
// seconds to start (replyflow-bench, 50 sessions: p99 3.5 s → 0.9 s).
func New(c client.Client, taskQueue string, acts *activities.Activities) worker.Worker {
	w := worker.New(c, taskQueue, worker.Options{MaxConcurrentWorkflowTaskPollers: 8, MaxConcurrentActivityTaskPollers: 8})
	Register(w, acts)
	return w
}

// Register adds the session workflow and every activity to a registry (a
// worker, a replayer or a test environment) under their contract names.
func Register(r worker.Registry, acts *activities.Activities) {
	r.RegisterWorkflowWithOptions(workflows.SessionWorkflow, workflow.RegisterOptions{Name: workflows.WorkflowName})
	if acts == nil {
		return
	}
	for name, fn := range map[string]any{
		pipeline.ActivityLoadSettings:   acts.LoadSettings,
		pipeline.ActivityAgentTurn:      acts.AgentTurn,
		pipeline.ActivityDeliver:        acts.Deliver,
		pipeline.ActivitySetReaction:    acts.SetReaction,
		pipeline.ActivityRecordFeedback: acts.RecordFeedback,
		pipeline.ActivitySaveSession:    acts.SaveSessionSettings,
		pipeline.ActivityRunTool:        acts.RunTool,
		pipeline.ActivityEdit:           acts.EditMessage,
		pipeline.ActivityGate:           acts.GateCheck,
		pipeline.ActivityClaim:          acts.Claim,
	} {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
