package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/replyflow/replyflow/workflows"
)

// fakeReleases is a Temporal with runs: each open run of the live type by
// its workflow ID and run ID, the run before it, and every run's type.
type fakeReleases struct {
	counts map[string]int64
	// open are the open runs of the live type, listed pageSize at a time.
	open     []*commonpb.WorkflowExecution
	pageSize int
	before   map[string]string // run ID → the run that continued into it
	types    map[string]string // run ID → its workflow type
}

func (f *fakeReleases) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return &workflowservice.CountWorkflowExecutionsResponse{Count: f.counts[req.GetQuery()]}, nil
}

func (f *fakeReleases) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	if req.GetQuery() != openRunsQuery(workflows.ChatSessionName) {
		return nil, fmt.Errorf("unexpected query %q", req.GetQuery())
	}
	from := 0
	if len(req.GetNextPageToken()) > 0 {
		fmt.Sscan(string(req.GetNextPageToken()), &from)
	}
	to := min(from+f.pageSize, len(f.open))
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for _, e := range f.open[from:to] {
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{Execution: e})
	}
	if to < len(f.open) {
		resp.NextPageToken = []byte(fmt.Sprint(to))
	}
	return resp, nil
}

func (f *fakeReleases) previousRun(_ context.Context, _, runID string) (string, error) {
	return f.before[runID], nil
}

func (f *fakeReleases) workflowType(_ context.Context, _, runID string) (string, error) {
	if t, ok := f.types[runID]; ok {
		return t, nil
	}
	return "", fmt.Errorf("no run %s", runID)
}

// live adds an open run of the live type, moved on from a run of
// fromType ("" for one that began as itself).
func (f *fakeReleases) live(id, fromType string) {
	run := fmt.Sprintf("run-%d", len(f.open))
	f.open = append(f.open, &commonpb.WorkflowExecution{WorkflowId: id, RunId: run})
	f.types[run] = workflows.ChatSessionName
	if fromType != "" {
		f.before[run] = run + "-before"
		f.types[run+"-before"] = fromType
	}
}

func TestReleasesSayWhatMayBeDeletedOnlyOnceNoRunIsOpen(t *testing.T) {
	releases := workflows.Releases()
	require.True(t, releases[0].Live)
	retiring := releases[1]
	list := func(f *fakeReleases) string {
		t.Helper()
		var out strings.Builder
		require.NoError(t, listReleases(context.Background(), f, releases, &out))
		return out.String()
	}
	f := &fakeReleases{counts: map[string]int64{openRunsQuery(releases[0].WorkflowType): 7, openRunsQuery(retiring.WorkflowType): 2},
		pageSize: 2, before: map[string]string{}, types: map[string]string{}}
	f.live("webchat:a", "")
	f.live("webchat:b", retiring.WorkflowType)
	f.live("webchat:c", workflows.ChatSessionName) // continued as new within the live release
	f.live("webchat:d", retiring.WorkflowType)
	f.live("webchat:e", "")

	got := list(f)
	assert.Contains(t, got, "chat-session: live, 7 open run(s)")
	assert.Contains(t, got, "session: retiring, 2 open run(s)")
	assert.Contains(t, got, "2 open run(s) of the live release began as a move from session", "b and d, read across pages")
	assert.NotContains(t, got, "Delete")
	assert.NotContains(t, got, "delete")

	f.counts[openRunsQuery(retiring.WorkflowType)] = 0
	got = list(f)
	assert.Contains(t, got, "session: retired, no open run. Delete "+retiring.Code+" and "+retiring.Histories)
	assert.Contains(t, got, "2 open run(s) of the live release began as a move from session and read its state when replayed: keep "+retiring.MovedCode)
	assert.NotContains(t, got, "as well")

	// The moved runs idled out, or continued as new into the live type.
	f.open, f.before = nil, map[string]string{}
	f.live("webchat:a", "")
	f.live("webchat:b", workflows.ChatSessionName)
	got = list(f)
	assert.Contains(t, got, "No open run of the live release began as a move from session: delete "+retiring.MovedCode+" and "+retiring.MovedHistories+" as well")
}
