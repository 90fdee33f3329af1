package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/workflows"
)

// releasesClient is what `replyflow releases` asks Temporal: how many
// runs of a type are open, which they are, and where a run came from.
type releasesClient interface {
	CountWorkflow(ctx context.Context, request *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
	ListWorkflow(ctx context.Context, request *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error)
	// previousRun is the run that continued as new into this one ("" for
	// a run that began otherwise).
	previousRun(ctx context.Context, workflowID, runID string) (string, error)
	// workflowType is a run's registered type.
	workflowType(ctx context.Context, workflowID, runID string) (string, error)
}

// temporalReleases is releasesClient over a Temporal client.
type temporalReleases struct{ client.Client }

func (c temporalReleases) previousRun(ctx context.Context, workflowID, runID string) (string, error) {
	// The run's first event only: a long history is not read.
	resp, err := c.WorkflowService().GetWorkflowExecutionHistory(ctx, &workflowservice.GetWorkflowExecutionHistoryRequest{
		Namespace:       temporalNamespace(),
		Execution:       &commonpb.WorkflowExecution{WorkflowId: workflowID, RunId: runID},
		MaximumPageSize: 1,
	})
	if err != nil {
		return "", err
	}
	events := resp.GetHistory().GetEvents()
	if len(events) == 0 {
		return "", fmt.Errorf("run %s of %s has no events", runID, workflowID)
	}
	return events[0].GetWorkflowExecutionStartedEventAttributes().GetContinuedExecutionRunId(), nil
}

func (c temporalReleases) workflowType(ctx context.Context, workflowID, runID string) (string, error) {
	resp, err := c.DescribeWorkflowExecution(ctx, workflowID, runID)
	if err != nil {
		return "", err
	}
	return resp.GetWorkflowExecutionInfo().GetType().GetName(), nil
}

// releasesCommand is `replyflow releases`: each release of the session
// workflow this build serves, with its open runs, and what may be
// deleted once a retiring one has none.
func releasesCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	if len(args) > 0 {
		return fmt.Errorf("usage: replyflow releases")
	}
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	return listReleases(ctx, temporalReleases{c}, workflows.Releases(), out)
}

// listReleases writes one paragraph a release.
func listReleases(ctx context.Context, c releasesClient, releases []workflows.Release, out io.Writer) error {
	var moved map[string]int
	for _, r := range releases {
		open, err := countOpen(ctx, c, r.WorkflowType)
		if err != nil {
			return err
		}
		switch {
		case r.Live:
			fmt.Fprintf(out, "%s: live, %d open run(s). New sessions start here.\n", r.WorkflowType, open)
			if moved, err = movedRuns(ctx, c, r.WorkflowType); err != nil {
				return err
			}
		case open > 0:
			fmt.Fprintf(out, "%s: retiring, %d open run(s). Each moves on to the live release at its next quiet point; `replyflow reload --all` wakes the idle ones. Keep %s and %s until none is open.\n",
				r.WorkflowType, open, r.Code, r.Histories)
		default:
			fmt.Fprintf(out, "%s: retired, no open run. Delete %s and %s together, and its registration in workers/worker.go.\n",
				r.WorkflowType, r.Code, r.Histories)
		}
		if r.Live || r.MovedCode == "" {
			continue
		}
		// A run that moved on reads this release's state for as long as
		// it is open, on every replay.
		if n := moved[r.WorkflowType]; n > 0 {
			fmt.Fprintf(out, "  %d open run(s) of the live release began as a move from %s and read its state when replayed: keep %s and %s until none is (each ends when its session idles out, or continues as new when its history grows).\n",
				n, r.WorkflowType, r.MovedCode, r.MovedHistories)
		} else if open == 0 {
			fmt.Fprintf(out, "  No open run of the live release began as a move from %s: delete %s and %s as well.\n",
				r.WorkflowType, r.MovedCode, r.MovedHistories)
		}
	}
	return nil
}

func countOpen(ctx context.Context, c releasesClient, workflowType string) (int64, error) {
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: openRunsQuery(workflowType)})
	if err != nil {
		return 0, fmt.Errorf("count the open runs of %s: %w", workflowType, err)
	}
	return resp.GetCount(), nil
}

// movedRuns counts the open runs of the live type by the type of the run
// that continued as new into them, where that was another type: the
// runs that moved on from a retiring release. It reads each open run's
// first event, and the type of the run before it.
func movedRuns(ctx context.Context, c releasesClient, live string) (map[string]int, error) {
	moved := map[string]int{}
	var page []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: openRunsQuery(live), NextPageToken: page})
		if err != nil {
			return nil, fmt.Errorf("list the open runs of %s: %w", live, err)
		}
		for _, run := range resp.GetExecutions() {
			id, runID := run.GetExecution().GetWorkflowId(), run.GetExecution().GetRunId()
			before, err := c.previousRun(ctx, id, runID)
			if err != nil {
				return nil, fmt.Errorf("read the first event of %s (run %s): %w", id, runID, err)
			}
			if before == "" {
				continue
			}
			typ, err := c.workflowType(ctx, id, before)
			if err != nil {
				return nil, fmt.Errorf("describe the run of %s before %s (run %s): %w", id, runID, before, err)
			}
			if typ != live {
				moved[typ]++
			}
		}
		if page = resp.GetNextPageToken(); len(page) == 0 {
			return moved, nil
		}
	}
}

// openRunsQuery finds the open runs of one workflow type.
func openRunsQuery(workflowType string) string {
	return fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = \"Running\"", workflowType)
}
