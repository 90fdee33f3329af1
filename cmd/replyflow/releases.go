package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"

	"golang.org/x/time/rate"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/workers"
	"github.com/replyflow/replyflow/workflows"
)

// releasesClient is what `replyflow releases` asks Temporal: how many
// runs of a type are open, which they are, and where a run came from.
type releasesClient interface {
	workers.RunCounter
	// previousRun is the run that continued as new into this one ("" for
	// a run that began otherwise).
	previousRun(ctx context.Context, workflowID, runID string) (string, error)
	// workflowType is a run's registered type.
	workflowType(ctx context.Context, workflowID, runID string) (string, error)
	// SignalWorkflow signals one run (--move-on).
	SignalWorkflow(ctx context.Context, workflowID, runID, signalName string, arg any) error
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

// defaultMoveOnRate is how many runs a second --move-on signals unless
// told otherwise: each signal is a billable action and wakes a run, so a
// large namespace is moved on over minutes, not in one burst.
const defaultMoveOnRate = 50

// releasesCommand is `replyflow releases`: each release of the session
// workflow this build serves, with its open runs, and what may be
// deleted once a retiring one has none. With --move-on it also asks
// each open run that still reads a retiring release's state to move on.
func releasesCommand(ctx context.Context, cfg Config, args []string, out io.Writer, logger *slog.Logger) error {
	fs := flag.NewFlagSet("releases", flag.ContinueOnError)
	moveOnFlag := fs.Bool("move-on", false, "wake each open run of a retiring release, and ask each open run that began as a move from one, to continue as new into the live release at its next quiet point")
	by := fs.String("by", currentUser(), "with --move-on: who asks, for the sessions' log")
	reason := fs.String("reason", "retire the state of a retiring release", "with --move-on: why, for the sessions' log")
	perSecond := fs.Float64("rate", defaultMoveOnRate, "with --move-on: at most this many runs a second")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *perSecond <= 0 {
		return fmt.Errorf("usage: replyflow releases [--move-on [--by name] [--reason text] [--rate %d]]", defaultMoveOnRate)
	}
	c, err := dialTemporal(ctx, cfg, "", logger)
	if err != nil {
		return err
	}
	defer c.Close()
	moved, err := listReleases(ctx, temporalReleases{c}, workflows.Releases(), out)
	if err != nil || !*moveOnFlag {
		return err
	}
	pace := rate.NewLimiter(rate.Limit(*perSecond), 1)
	return moveOn(ctx, temporalReleases{c}, workflows.Releases(), moved, *by, *reason, pace, out)
}

// moveOn is --move-on. A run of a retiring release moves on at its next
// quiet point once anything wakes it: it is sent the reload signal,
// which every release takes. A run of the live release that began as a
// move is sent the move-on signal. The runs the first become are moved
// runs in their turn: the next --move-on asks them.
func moveOn(ctx context.Context, c releasesClient, releases []workflows.Release, moved []movedRun, by, reason string, pace waiter, out io.Writer) error {
	for _, r := range releases {
		if r.Live || r.Deleted() {
			// A deleted release's runs have no worker here to move them.
			continue
		}
		runs, err := openRuns(ctx, c, r.WorkflowType)
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			continue
		}
		n, err := signalRuns(ctx, c, runs, workflows.SignalReload, workflows.ReloadRequest{By: by, Reason: "move on to the live release: " + reason}, pace)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "Woke %d open run(s) of %s: each moves on to the live release at its next quiet point. Run `replyflow releases --move-on` again once none is open, for the runs they become.\n", n.Signalled, r.WorkflowType)
		n.sayGone(out)
	}
	n, err := signalRuns(ctx, c, moved, workflows.SignalMoveOn, workflows.MoveOnRequest{By: by, Reason: reason}, pace)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Move-on sent to %d run(s): each continues as new at its next quiet point (between turns, or while its turn waits for a person) into a run that reads no retiring state. Run `replyflow releases` again to see them go.\n", n.Signalled)
	n.sayGone(out)
	return nil
}

// openRuns lists the open runs of a workflow type.
func openRuns(ctx context.Context, c releasesClient, workflowType string) ([]movedRun, error) {
	var runs []movedRun
	err := eachOpenRun(ctx, c, workflowType, func(id, runID string) error {
		runs = append(runs, movedRun{WorkflowID: id, RunID: runID, From: workflowType})
		return nil
	})
	return runs, err
}

// eachOpenRun hands each open run of a workflow type to take, a page of
// the visibility listing at a time.
func eachOpenRun(ctx context.Context, c releasesClient, workflowType string, take func(id, runID string) error) error {
	var page []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: openRunsQuery(workflowType), NextPageToken: page})
		if err != nil {
			return fmt.Errorf("list the open runs of %s: %w", workflowType, err)
		}
		for _, run := range resp.GetExecutions() {
			if err := take(run.GetExecution().GetWorkflowId(), run.GetExecution().GetRunId()); err != nil {
				return err
			}
		}
		if page = resp.GetNextPageToken(); len(page) == 0 {
			return nil
		}
	}
}

// movedRun is an open run of the live type that began as a move from a
// retiring release's run, or (openRuns) an open run of a retiring
// release.
type movedRun struct {
	WorkflowID, RunID string
	// From is the retiring release's workflow type.
	From string
}

// listReleases writes one paragraph a release, and returns the open runs
// of the live release that began as a move from a retiring one.
func listReleases(ctx context.Context, c releasesClient, releases []workflows.Release, out io.Writer) ([]movedRun, error) {
	var moved []movedRun
	for _, r := range releases {
		open, err := countOpen(ctx, c, r.WorkflowType)
		if err != nil {
			return nil, err
		}
		switch {
		case r.Live:
			fmt.Fprintf(out, "%s: live, %d open run(s). New sessions start here.\n", r.WorkflowType, open)
			if moved, err = movedRuns(ctx, c, r.WorkflowType); err != nil {
				return nil, err
			}
		case r.Deleted() && open > 0:
			fmt.Fprintf(out, "%s: deleted, yet %d open run(s), which no worker of this build serves (and its workers do not start beside them): run the build before the deletion, and its `replyflow releases --move-on`, until none is open.\n",
				r.WorkflowType, open)
		case r.Deleted():
			fmt.Fprintf(out, "%s: deleted, no open run.\n", r.WorkflowType)
		case open > 0:
			fmt.Fprintf(out, "%s: retiring, %d open run(s). Each moves on to the live release at its next quiet point; `replyflow releases --move-on` wakes the idle ones. Keep %s and %s until none is open.\n",
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
		if n := countFrom(moved, r.WorkflowType); n > 0 {
			fmt.Fprintf(out, "  %d open run(s) of the live release began as a move from %s and read its state when replayed: keep %s and %s until none is (each ends when its session idles out, or continues as new when its history grows; `replyflow releases --move-on` asks each to continue as new at its next quiet point).\n",
				n, r.WorkflowType, r.MovedCode, r.MovedHistories)
		} else if open == 0 {
			fmt.Fprintf(out, "  No open run of the live release began as a move from %s: delete %s and %s as well.\n",
				r.WorkflowType, r.MovedCode, r.MovedHistories)
		}
	}
	return moved, nil
}

func countFrom(moved []movedRun, workflowType string) int {
	n := 0
	for _, m := range moved {
		if m.From == workflowType {
			n++
		}
	}
	return n
}

// signalled counts what signalRuns did.
type signalled struct{ Signalled, Gone int }

func (n signalled) sayGone(out io.Writer) {
	if n.Gone > 0 {
		fmt.Fprintf(out, "%d run(s) had closed or continued as new meanwhile.\n", n.Gone)
	}
}

// signalRuns sends the signal to each of the runs, paced. Each signal
// names its run: a run that has meanwhile continued as new or closed is
// not signalled, and the run that followed it is not the one asked.
func signalRuns(ctx context.Context, c releasesClient, runs []movedRun, signal string, arg any, pace waiter) (signalled, error) {
	var n signalled
	for _, run := range runs {
		if err := pace.Wait(ctx); err != nil {
			return n, fmt.Errorf("signal %s: stopped after %d of %d run(s): %w", signal, n.Signalled, len(runs), err)
		}
		err := c.SignalWorkflow(ctx, run.WorkflowID, run.RunID, signal, arg)
		var notFound *serviceerror.NotFound
		switch {
		case errors.As(err, &notFound):
			n.Gone++
		case err != nil:
			return n, fmt.Errorf("signal %s to %s (run %s), stopped after %d of %d run(s); run it again to reach the rest (a run asked twice moves on once): %w",
				signal, run.WorkflowID, run.RunID, n.Signalled, len(runs), err)
		default:
			n.Signalled++
		}
	}
	return n, nil
}

// waiter paces signals (a rate.Limiter).
type waiter interface{ Wait(context.Context) error }

func countOpen(ctx context.Context, c releasesClient, workflowType string) (int64, error) {
	resp, err := c.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Query: openRunsQuery(workflowType)})
	if err != nil {
		return 0, fmt.Errorf("count the open runs of %s: %w", workflowType, err)
	}
	return resp.GetCount(), nil
}

// movedRuns lists the open runs of the live type whose run before was of
// another type: the runs that moved on from a retiring release. It reads
// each open run's first event, and the type of the run before it. The
// list holds one entry an open session at most.
func movedRuns(ctx context.Context, c releasesClient, live string) ([]movedRun, error) {
	var moved []movedRun
	err := eachOpenRun(ctx, c, live, func(id, runID string) error {
		before, err := c.previousRun(ctx, id, runID)
		if err != nil {
			return fmt.Errorf("read the first event of %s (run %s): %w", id, runID, err)
		}
		if before == "" {
			return nil
		}
		typ, err := c.workflowType(ctx, id, before)
		if err != nil {
			return fmt.Errorf("describe the run of %s before %s (run %s): %w", id, runID, before, err)
		}
		if typ != live {
			moved = append(moved, movedRun{WorkflowID: id, RunID: runID, From: typ})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return moved, nil
}

// openRunsQuery finds the open runs of one workflow type.
func openRunsQuery(workflowType string) string {
	return fmt.Sprintf("WorkflowType = %q AND ExecutionStatus = \"Running\"", workflowType)
}
