package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/workers/reload"
	"github.com/replyflow/replyflow/workflows"
)

// The gauges of what stands now, for alerts that stay on until someone
// acts: a counter's increase clears itself once its window passes, a
// count of parked sessions clears only when they are retried. Every
// worker exports the same numbers (they come from Temporal, not from the
// worker), so the alerts take their max().
const (
	// MetricSessions is the open sessions of the task queue, by state
	// (the ReplyflowState search attribute) and task_queue.
	MetricSessions = "replyflow_sessions"
	// MetricProposalsPending is the proposals waiting for a decision in
	// the task queue's open sessions (the sum of their
	// ReplyflowPendingProposals, each counted up to maxProposalsCounted).
	MetricProposalsPending = "replyflow_proposals_pending"
	// MetricTaskQueuePollers is the pollers Temporal saw on the task queue
	// lately, by task_queue and type (workflow, activity).
	MetricTaskQueuePollers = "replyflow_task_queue_pollers"
	// MetricGaugesUpdated is when the gauges above were last all read,
	// in seconds since the epoch: the alerts on them are blind while it
	// stands still.
	MetricGaugesUpdated = "replyflow_gauges_updated_timestamp_seconds"
)

// GaugeInterval is how often the gauges are read again: each read is a
// few visibility count queries, so every worker reading them costs
// Temporal little, and an alert that waits minutes sees every change.
const GaugeInterval = 30 * time.Second

// gaugeTimeout bounds one read of every gauge; a read that runs over
// leaves the gauges as they were and MetricGaugesUpdated behind.
const gaugeTimeout = 10 * time.Second

// maxProposalsCounted bounds the count queries of one read of
// MetricProposalsPending: a session's pending proposals are counted up to
// this many (more wait only where a model proposes in a loop, which the
// gauge shows at this level already).
const maxProposalsCounted = 10

// countedStates are the ReplyflowState values counted, each with a query
// of its own: every state a session publishes, those only older sessions
// publish too (debouncing, gating).
var countedStates = []workflows.Status{
	workflows.StatusIdle, workflows.StatusDebouncing, workflows.StatusGating, workflows.StatusThinking,
	workflows.StatusWaitingUser, workflows.StatusDelivering, workflows.StatusDeliveryFailed,
}

// Visibility is the part of the Temporal client the gauges read.
type Visibility interface {
	CountWorkflow(ctx context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
	DescribeTaskQueue(ctx context.Context, taskQueue string, taskQueueType enumspb.TaskQueueType) (*workflowservice.DescribeTaskQueueResponse, error)
}

// Gauges reads the gauges of one task queue from Temporal into a metrics
// handler.
type Gauges struct {
	// Client is a Temporal client of the sessions' namespace.
	Client    Visibility
	TaskQueue string
	Metrics   client.MetricsHandler
	// Sessions counts the sessions by state and their pending proposals
	// (a worker's); without it only the task queue's pollers are read (a
	// gateway's: it knows which queue it starts sessions on, and sees a
	// queue that no worker polls).
	Sessions bool
	Logger   *slog.Logger
	// Now is the clock of MetricGaugesUpdated; nil is time.Now.
	Now func() time.Time
}

// Run reads the gauges at once, then every GaugeInterval, until ctx is
// done. A failed read is logged once, and its recovery once.
func (g Gauges) Run(ctx context.Context) {
	ticker := time.NewTicker(GaugeInterval)
	defer ticker.Stop()
	failing := false
	for {
		err := g.Read(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && !failing:
			g.Logger.Warn("Reading the session and task queue gauges from Temporal failed; the alerts on them are blind until it works again (replyflow_gauges_updated_timestamp_seconds stands still)",
				"task_queue", g.TaskQueue, "error", err)
		case err == nil && failing:
			g.Logger.Info("Reading the session and task queue gauges from Temporal works again", "task_queue", g.TaskQueue)
		}
		failing = err != nil
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Read reads every gauge once, within gaugeTimeout. The gauges are
// updated only when all of them were read, so a partial read never
// shows a mix of old and new numbers.
func (g Gauges) Read(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, gaugeTimeout)
	defer cancel()
	pollers := map[string]int{}
	for name, t := range map[string]enumspb.TaskQueueType{"workflow": enumspb.TASK_QUEUE_TYPE_WORKFLOW, "activity": enumspb.TASK_QUEUE_TYPE_ACTIVITY} {
		resp, err := g.Client.DescribeTaskQueue(ctx, g.TaskQueue, t)
		if err != nil {
			return fmt.Errorf("describe task queue %q (%s): %w", g.TaskQueue, name, timedOut(ctx, err))
		}
		pollers[name] = len(resp.GetPollers())
	}
	var states map[workflows.Status]int64
	var proposals int64
	if g.Sessions {
		open := reload.OpenQuery(g.TaskQueue)
		states = make(map[workflows.Status]int64, len(countedStates))
		for _, s := range countedStates {
			n, err := g.count(ctx, fmt.Sprintf("%s AND %s = %q", open, workflows.AttrState.GetName(), s))
			if err != nil {
				return err
			}
			states[s] = n
		}
		// The sum of the sessions' pending proposals, from counts alone:
		// a session with k of them is counted once by each of the
		// queries "at least 1" .. "at least k".
		for k := 1; k <= maxProposalsCounted; k++ {
			n, err := g.count(ctx, fmt.Sprintf("%s AND %s >= %d", open, workflows.AttrPendingProposals.GetName(), k))
			if err != nil {
				return err
			}
			if n == 0 {
				break
			}
			proposals += n
		}
	}
	tq := g.Metrics.WithTags(map[string]string{"task_queue": g.TaskQueue})
	for name, n := range pollers {
		tq.WithTags(map[string]string{"type": name}).Gauge(MetricTaskQueuePollers).Update(float64(n))
	}
	for s, n := range states {
		tq.WithTags(map[string]string{"state": string(s)}).Gauge(MetricSessions).Update(float64(n))
	}
	if g.Sessions {
		tq.Gauge(MetricProposalsPending).Update(float64(proposals))
	}
	now := time.Now
	if g.Now != nil {
		now = g.Now
	}
	tq.Gauge(MetricGaugesUpdated).Update(float64(now().Unix()))
	return nil
}

func (g Gauges) count(ctx context.Context, query string) (int64, error) {
	resp, err := g.Client.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		return 0, fmt.Errorf("count sessions with %q (are replyflow's search attributes registered? see deploy/README.md): %w", query, timedOut(ctx, err))
	}
	return resp.GetCount(), nil
}

// timedOut names the bound a read ran over.
func timedOut(ctx context.Context, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no answer within %s: %w", gaugeTimeout, err)
	}
	return err
}
