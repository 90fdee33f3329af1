package main

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/workers"
)

// On a real server: a task queue with an open run of a workflow type the
// build does not register (a release deleted too early) keeps the worker
// from starting, naming the run; a task queue without one does not.
func TestAWorkerDoesNotStartBesideARunOfADeletedRelease(t *testing.T) {
	t.Parallel()
	c := temporalServer.Client()
	ctx := context.Background()
	queue := "served-" + uniqueChat("types")
	quiet := slog.New(slog.DiscardHandler)
	require.NoError(t, workers.CheckServedTypes(ctx, c, queue, workers.ServedWorkflowTypes(), quiet), "nothing open yet")

	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: "deleted-release-" + queue, TaskQueue: queue}, "a-deleted-release")
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.TerminateWorkflow(context.Background(), run.GetID(), "", "test over") })
	var last error
	require.Eventually(t, func() bool {
		last = workers.CheckServedTypes(ctx, c, queue, workers.ServedWorkflowTypes(), quiet)
		return last != nil
	}, 30*time.Second, 100*time.Millisecond, "the open run of an unserved type is found (visibility is eventually consistent)")
	require.True(t, strings.Contains(last.Error(), "a-deleted-release, e.g. deleted-release-"+queue), last.Error())
	require.NoError(t, workers.CheckServedTypes(ctx, c, queue, append(workers.ServedWorkflowTypes(), "a-deleted-release"), quiet),
		"a build that serves the type starts")
}
