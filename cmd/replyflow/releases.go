package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"go.temporal.io/api/workflowservice/v1"

	"github.com/replyflow/replyflow/workflows"
)

// openRunsCounter counts workflow runs by a visibility query (a
// Temporal client).
type openRunsCounter interface {
	CountWorkflow(ctx context.Context, request *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error)
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
	return listReleases(ctx, c, workflows.Releases(), out)
}

// listReleases writes one paragraph a release.
func listReleases(ctx context.Context, c openRunsCounter, releases []workflows.Release, out io.Writer) error {
	for _, r := range releases {
		resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: openRunsQuery(r.WorkflowType)})
		if err != nil {
			return fmt.Errorf("count the open runs of %s: %w", r.WorkflowType, err)
		}
		open := resp.GetCount()
		switch {
		case r.Live:
			fmt.Fprintf(out, "%s: live, %d open run(s). New sessions start here.\n", r.WorkflowType, open)
		case open > 0:
			fmt.Fprintf(out, "%s: retiring, %d open run(s). Each moves on to the live release at its next quiet point; `replyflow reload --all` wakes the idle ones. Keep %s and %s until none is open.\n",
				r.WorkflowType, open, r.Code, r.Histories)
		default:
			fmt.Fprintf(out, "%s: retired, no open run. Delete %s and %s together, and its registration in workers/worker.go.\n",
				r.WorkflowType, r.Code, r.Histories)
		}
	}
	return nil
}

// openRunsQuery finds the open runs of one workflow type.
func openRunsQuery(workflowType string) string {
	return fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = \"Running\"", workflowType)
}
