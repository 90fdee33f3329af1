package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"golang.org/x/time/rate"

	"github.com/replyflow/replyflow/workers/reload"
)

// MaxUnstuck bounds how many sessions one worker start releases from the
// sticky queues of earlier workers; a busy session beyond it still moves
// on, StickyScheduleToStartTimeout later.
const MaxUnstuck = 5000

// unstickRate is how many sessions a second are released: each release
// is one write of the session's state on the server, so a worker that
// starts beside thousands of open sessions spreads them over seconds.
const unstickRate = 500

// unstickPage is how many sessions one visibility page lists: the only
// ones held in memory at a time.
const unstickPage = 500

// Sticky is the part of the Temporal client Unstick needs.
type Sticky interface {
	ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	ResetStickyTaskQueue(ctx context.Context, req *workflowservice.ResetStickyTaskQueueRequest) error
}

// Unstick sends the next workflow task of the task queue's open sessions
// (at most MaxUnstuck) to the task queue every worker polls, instead of
// the sticky queue of the worker that last ran them, and says how many
// it released. A worker killed outright (SIGKILL, out of memory) never
// gives its sessions back: without this, each session whose model
// attempt the dead worker lost would wait, once the attempt timed out,
// StickyScheduleToStartTimeout on the dead worker's queue before being
// asked again. A worker calls it as it starts, when a crashed
// predecessor is most likely.
//
// Visibility cannot tell the dead worker's sessions from the others (a
// turn's first step shows as idle), so every open session is released. A
// live worker's session loses nothing by it: its next task replays its
// history from the server, once, on whichever worker takes it. An idle
// session's next task comes from a person, by which time the server has
// stopped sending tasks to a sticky queue nobody polls, so the release
// matters for the busy ones only.
func Unstick(ctx context.Context, c Sticky, taskQueue string) (int, error) {
	return unstick(ctx, c, taskQueue, rate.NewLimiter(unstickRate, 1))
}

func unstick(ctx context.Context, c Sticky, taskQueue string, pace *rate.Limiter) (int, error) {
	query := reload.OpenQuery(taskQueue)
	released := 0
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: unstickPage, NextPageToken: token})
		if err != nil {
			return released, fmt.Errorf("list the open sessions of task queue %s with %q (are replyflow's search attributes registered? see deploy/README.md): %w", taskQueue, query, err)
		}
		for _, e := range resp.GetExecutions() {
			if released == MaxUnstuck {
				return released, nil
			}
			if err := pace.Wait(ctx); err != nil {
				return released, err
			}
			run := e.GetExecution()
			err := c.ResetStickyTaskQueue(ctx, &workflowservice.ResetStickyTaskQueueRequest{
				Execution: &commonpb.WorkflowExecution{WorkflowId: run.GetWorkflowId(), RunId: run.GetRunId()},
			})
			var notFound *serviceerror.NotFound
			switch {
			case err == nil:
				released++
			case errors.As(err, &notFound):
				// It completed or continued as new since it was listed:
				// nothing of it waits on a sticky queue.
			default:
				return released, fmt.Errorf("release %s from its last worker's sticky queue (stopped after %d sessions of task queue %s): %w", run.GetWorkflowId(), released, taskQueue, err)
			}
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return released, nil
		}
	}
}

// UnstickAfterStart runs Unstick and logs what it did; a failure costs
// only time after a crash, so it is a warning.
func UnstickAfterStart(ctx context.Context, c Sticky, taskQueue string, logger *slog.Logger) {
	n, err := Unstick(ctx, c, taskQueue)
	if err != nil {
		if ctx.Err() == nil {
			logger.Warn("Sessions of a worker that died wait for its sticky queue to time out before they move on", "task_queue", taskQueue, "released", n, "error", err)
		}
		return
	}
	if n > 0 {
		logger.Info("Open sessions released from the sticky queues of earlier workers", "task_queue", taskQueue, "released", n)
	}
}

// ClientSticky adapts a Temporal client of Namespace to Sticky (the
// client fills its namespace in for the list, not for the release).
type ClientSticky struct {
	Client interface {
		ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
		WorkflowService() workflowservice.WorkflowServiceClient
	}
	Namespace string
}

func (s ClientSticky) ListWorkflow(ctx context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	return s.Client.ListWorkflow(ctx, req)
}

func (s ClientSticky) ResetStickyTaskQueue(ctx context.Context, req *workflowservice.ResetStickyTaskQueueRequest) error {
	req.Namespace = s.Namespace
	_, err := s.Client.WorkflowService().ResetStickyTaskQueue(ctx, req)
	return err
}
