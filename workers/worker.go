package workers

import (
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
	"github.com/replyflow/replyflow/workflows/session"
)

// DefaultTaskQueue is where session workflows and their activities run.
const DefaultTaskQueue = "replyflow"

// DefaultWorkflowCacheSize is how many sessions a worker keeps in memory
// (the SDK's sticky cache; its own default is 10,000). A cached session
// costs about 60 KB; one that was evicted replays its history on its next
// message. Most open sessions are idle, so a smaller cache keeps memory
// flat as sessions pile up, where the SDK's default would hold every one
// of thousands of idle sessions in memory (docs/performance.md measures
// it).
const DefaultWorkflowCacheSize = 2000

// SetWorkflowCacheSize sizes the cache of sessions kept in memory, shared
// by every worker of the process. It must be called before the first
// worker starts; 0 keeps DefaultWorkflowCacheSize.
func SetWorkflowCacheSize(n int) {
	if n <= 0 {
		n = DefaultWorkflowCacheSize
	}
	worker.SetStickyWorkflowCacheSize(n)
}

// StickyScheduleToStartTimeout is how long a session's workflow task
// waits on the queue of the worker that holds the session in memory
// before the server hands it to any worker (the SDK's default is 5 s). A
// worker killed outright (SIGKILL, out of memory, its machine gone)
// cannot give its sessions back, so each of them waits this long before
// its next step runs elsewhere, on top of the heartbeat timeout when a
// model call was in flight. A live worker's pollers (autoscaled, a
// poller of their own for cached sessions) pick a task up within
// milliseconds, so a second is far above what a healthy worker needs; a
// task that does wait longer runs on another poller with a replay of its
// history, which costs time but loses nothing.
const StickyScheduleToStartTimeout = time.Second

// HeartbeatThrottle is the longest an activity's heartbeat waits before
// it is sent to the server. A model attempt heartbeats every third of its
// heartbeat timeout (REPLYFLOW_TURN_HEARTBEAT_TIMEOUT, at least 1 s):
// with a throttle at most that, every one of them reaches the server,
// and the attempt of a live worker is never taken for lost.
const HeartbeatThrottle = 300 * time.Millisecond

// Worker is a Temporal worker that knows which activities it is running.
type Worker struct {
	worker.Worker
	running *runningActivities
}

// Running names the activities the worker is executing, "<activity> for
// <session>", sorted: what a stop waits for.
func (w *Worker) Running() []string { return w.running.list() }

// New builds a worker that serves session workflows and their activities on
// taskQueue. The caller starts and stops it. Its pollers scale with the
// server's feedback, and sessions already in the cache and new ones have
// pollers of their own: the SDK's fixed pollers serve cached sessions
// first, so on a busy worker a new session's first task would wait
// seconds behind them.
//
// Stop stops polling at once and lets running activities finish for up to
// stopTimeout before it cancels them: with no grace, every deploy would
// cancel model attempts and deliveries mid-flight, and a Telegram chunk
// sent but not yet reported would go out twice on the retry.
//
// With a versioned deployment, the worker serves that version only (see
// Deployment); start PromoteWhenRegistered beside it.
func New(c client.Client, taskQueue string, acts *activities.Activities, stopTimeout time.Duration, deployment Deployment) *Worker {
	pollers := worker.NewPollerBehaviorAutoscaling(worker.PollerBehaviorAutoscalingOptions{InitialNumberOfPollers: 8})
	running := newRunningActivities()
	w := worker.New(c, taskQueue, worker.Options{
		WorkflowTaskPollerBehavior: pollers,
		ActivityTaskPollerBehavior: pollers,
		WorkerStopTimeout:          stopTimeout,
		// A streamed answer's heartbeat carries what the user already saw
		// (the preview's ID, the blocks sent); it must reach the server
		// at once, or the attempt after a crash could post them again.
		MaxHeartbeatThrottleInterval: HeartbeatThrottle,
		StickyScheduleToStartTimeout: StickyScheduleToStartTimeout,
		Interceptors:                 []interceptor.WorkerInterceptor{running},
		DeploymentOptions:            deployment.options(),
	})
	Register(w, acts)
	return &Worker{Worker: w, running: running}
}

// servedWorkflow is a workflow type this build's workers serve.
type servedWorkflow struct {
	name string
	fn   any
}

// servedWorkflows are the workflow types this build's workers serve: the
// session workflow of each release that may have open runs (the live one
// alone today; workflows/releases.go) and the heartbeat tick.
func servedWorkflows() []servedWorkflow {
	return []servedWorkflow{
		{session.WorkflowName, session.Workflow},
		{pipeline.WorkflowHeartbeatTick, workflows.HeartbeatTickWorkflow},
	}
}

// ServedWorkflowTypes are the names of servedWorkflows.
func ServedWorkflowTypes() []string {
	var names []string
	for _, wf := range servedWorkflows() {
		names = append(names, wf.name)
	}
	return names
}

// Register adds the session workflow, the heartbeat tick and every
// activity to a registry (a worker, a replayer or a test environment)
// under their contract names.
func Register(r worker.Registry, acts *activities.Activities) {
	for _, wf := range servedWorkflows() {
		// Auto-upgrade (see Deployment); an unversioned worker ignores it.
		r.RegisterWorkflowWithOptions(wf.fn, workflow.RegisterOptions{Name: wf.name, VersioningBehavior: workflow.VersioningBehaviorAutoUpgrade})
	}
	if acts == nil {
		return
	}
	activities := map[string]any{
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
		// The in-chat commands answered from the store: /context, /compact, /export.
		pipeline.ActivityDescribeContext:   acts.DescribeContext,
		pipeline.ActivityCompactTranscript: acts.CompactTranscript,
		pipeline.ActivityExportTranscript:  acts.ExportTranscript,
	}
	if hb := acts.Heartbeats; hb != nil {
		activities[pipeline.ActivitySignalHeartbeat] = hb.SignalHeartbeat
		activities[pipeline.ActivityUpsertHeartbeat] = hb.UpsertHeartbeat
		activities[pipeline.ActivityDeleteHeartbeat] = hb.DeleteHeartbeat
		activities[pipeline.ActivityTriggerHeartbeat] = hb.TriggerHeartbeat
		activities[pipeline.ActivityDescribeHeartbeat] = hb.DescribeHeartbeat
		activities[pipeline.ActivityReadHeartbeatChecklist] = hb.ReadHeartbeatChecklist
	}
	for name, fn := range activities {
		r.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
}
