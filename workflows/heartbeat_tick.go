package workflows

import (
	"time"

	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/pipeline"
)

// HeartbeatTickWorkflow is what a session's heartbeat schedule starts at
// each tick (a schedule can only start workflows, and a workflow cannot
// SignalWithStart): one activity signals the session, starting it when it
// is closed, and the tick ends. Its history stays a dozen events: retries
// of the activity add none.
//
// The tick's ID is the schedule's action ID plus the scheduled time, so
// the session sees one ID per tick however often the start or the signal
// is repeated.
func HeartbeatTickWorkflow(ctx workflow.Context, p pipeline.HeartbeatTickParams) error {
	tick := pipeline.HeartbeatTick{ID: workflow.GetInfo(ctx).WorkflowExecution.ID, ScheduledAt: scheduledAt(ctx)}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// A signal takes milliseconds; a tick later than two minutes is
		// stale, and the next one is due anyway.
		StartToCloseTimeout:    10 * time.Second,
		ScheduleToCloseTimeout: 2 * time.Minute,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    30 * time.Second,
		},
		Summary: "heartbeat to " + p.Session.WorkflowID(),
	})
	return workflow.ExecuteActivity(ctx, pipeline.ActivitySignalHeartbeat,
		pipeline.HeartbeatSignal{Session: p.Session, Tick: tick}).Get(ctx, nil)
}

// attrScheduledStart is the time the schedule meant the tick for, which
// the server sets on every workflow a schedule starts.
var attrScheduledStart = temporal.NewSearchAttributeKeyTime("TemporalScheduledStartTime")

// scheduledAt is the tick's scheduled time; a tick started by hand (not
// by a schedule) has its start time.
func scheduledAt(ctx workflow.Context) time.Time {
	if t, ok := workflow.GetTypedSearchAttributes(ctx).GetTime(attrScheduledStart); ok {
		return t.UTC()
	}
	return workflow.GetInfo(ctx).WorkflowStartTime.UTC()
}
