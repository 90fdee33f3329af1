package workers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
)

// RunCounter counts and lists workflow runs by a visibility query: what
// the served-types check needs, and `replyflow releases` too;
// client.Client is the real one.
type RunCounter interface {
	CountWorkflow(ctx context.Context, request *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
}

// CheckServedTypes fails when the task queue has open runs of a workflow
// type this build does not serve: a release deleted while runs of it were
// still open. Their workflow tasks would fail on this build's workers
// again and again, so it does not start; the build before it serves them
// and moves them on. A server whose visibility cannot answer the query is
// logged and passed.
func CheckServedTypes(ctx context.Context, c RunCounter, taskQueue string, served []string, logger *slog.Logger) error {
	ctx, cancel := context.WithTimeout(ctx, searchAttributeCheckTimeout)
	defer cancel()
	query := unservedRunsQuery(taskQueue, served)
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: query})
	if err != nil {
		var invalid *serviceerror.InvalidArgument
		var denied *serviceerror.PermissionDenied
		if errors.As(err, &invalid) || errors.As(err, &denied) {
			logger.Warn("Could not check that this build serves every open run of its task queue; before deleting a release, run `replyflow releases`", "task_queue", taskQueue, "error", err)
			return nil
		}
		return fmt.Errorf("count the open runs of task queue %s that this build does not serve: %w", taskQueue, err)
	}
	if resp.GetCount() == 0 {
		return nil
	}
	example := "a type it does not register"
	if list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: query, PageSize: 1}); err == nil && len(list.GetExecutions()) > 0 {
		e := list.GetExecutions()[0]
		example = fmt.Sprintf("%s, e.g. %s", e.GetType().GetName(), e.GetExecution().GetWorkflowId())
	}
	return fmt.Errorf("%d open run(s) on task queue %s are of a workflow type this build does not serve (%s): a release was deleted while runs of it were open. "+
		"Start the build before this one and run its `replyflow releases --move-on` until `replyflow releases` shows none open, then start this one",
		resp.GetCount(), taskQueue, example)
}

// unservedRunsQuery finds the open runs of a task queue whose type is
// none of served.
func unservedRunsQuery(taskQueue string, served []string) string {
	quoted := make([]string, len(served))
	for i, name := range served {
		quoted[i] = fmt.Sprintf("%q", name)
	}
	return fmt.Sprintf("TaskQueue = %q AND ExecutionStatus = \"Running\" AND WorkflowType NOT IN (%s)", taskQueue, strings.Join(quoted, ", "))
}
