package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
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
	// signalled are the signals sent, as "name workflowID runID by";
	// closed runs answer them NotFound, failing ones with an error.
	signalled []string
	closed    map[string]bool
	failing   map[string]bool
	// retiring are the open runs of the retiring type.
	retiring []*workflowpb.WorkflowExecutionInfo
}

func (f *fakeReleases) SignalWorkflow(_ context.Context, id, runID, name string, arg any) error {
	switch {
	case f.closed[runID]:
		return serviceerror.NewNotFound("workflow execution already completed")
	case f.failing[runID]:
		return errors.New("unavailable")
	}
	switch a := arg.(type) {
	case workflows.MoveOnRequest:
		f.signalled = append(f.signalled, fmt.Sprintf("%s %s %s %s", name, id, runID, a.By))
	case workflows.ReloadRequest:
		f.signalled = append(f.signalled, fmt.Sprintf("%s %s %s %s: %s", name, id, runID, a.By, a.Reason))
	default:
		return fmt.Errorf("unexpected payload %T", arg)
	}
	return nil
}

func (f *fakeReleases) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return &workflowservice.CountWorkflowExecutionsResponse{Count: f.counts[req.GetQuery()]}, nil
}

func (f *fakeReleases) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	if req.GetQuery() == openRunsQuery(workflows.WorkflowName) {
		return &workflowservice.ListWorkflowExecutionsResponse{Executions: f.retiring}, nil
	}
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

// retiringReleases are a live release and one retiring beside it, as a
// build that ships a new release has them.
func retiringReleases() []workflows.Release {
	return []workflows.Release{
		{WorkflowType: workflows.ChatSessionName, Live: true, Code: "workflows/session", Histories: "workflows/session/testdata/histories"},
		{WorkflowType: workflows.WorkflowName, Code: "workflows/retiring", Histories: "workflows/testdata/histories",
			MovedCode: "workflows/state.go", MovedHistories: "workflows/session/testdata/histories/retire-2026-11"},
	}
}

func TestReleasesSayWhatMayBeDeletedOnlyOnceNoRunIsOpen(t *testing.T) {
	releases := retiringReleases()
	require.True(t, releases[0].Live)
	retiring := releases[1]
	list := func(f *fakeReleases) string {
		t.Helper()
		var out strings.Builder
		_, err := listReleases(context.Background(), f, releases, &out)
		require.NoError(t, err)
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

type noPace struct{ waits int }

func (p *noPace) Wait(context.Context) error { p.waits++; return nil }

func TestMoveOnWakesTheRetiringRunsAndAsksEachMovedRunByItsRunIDPaced(t *testing.T) {
	releases := retiringReleases()
	retiring := releases[1]
	f := &fakeReleases{counts: map[string]int64{}, pageSize: 2, before: map[string]string{}, types: map[string]string{},
		closed: map[string]bool{}, failing: map[string]bool{}}
	f.live("webchat:a", "")
	f.live("webchat:b", retiring.WorkflowType)
	f.live("webchat:c", workflows.ChatSessionName)
	f.live("webchat:d", retiring.WorkflowType)
	f.live("webchat:e", retiring.WorkflowType)
	f.closed["run-4"] = true // e continued as new after it was listed
	f.retiring = []*workflowpb.WorkflowExecutionInfo{{Execution: &commonpb.WorkflowExecution{WorkflowId: "webchat:f", RunId: "old-f"}}}

	var out strings.Builder
	moved, err := listReleases(context.Background(), f, releases, &out)
	require.NoError(t, err)
	pace := &noPace{}
	out.Reset()
	require.NoError(t, moveOn(context.Background(), f, releases, moved, "ops", "why", pace, &out))
	assert.Equal(t, []string{
		"reload webchat:f old-f ops: move on to the live release: why",
		"move-on webchat:b run-1 ops", "move-on webchat:d run-3 ops",
	}, f.signalled, "the retiring run is woken; of the live ones, only those that began as a move are asked, each by its run")
	assert.Equal(t, 4, pace.waits, "every signal waits its turn")
	assert.Contains(t, out.String(), "Woke 1 open run(s) of session")
	assert.Contains(t, out.String(), "Move-on sent to 2 run(s)")
	assert.Contains(t, out.String(), "1 run(s) had closed or continued as new meanwhile")

	// A failure stops the round and says where, and how to go on.
	f.signalled, f.failing["run-3"], f.retiring = nil, true, nil
	err = moveOn(context.Background(), f, releases, moved, "ops", "why", pace, &out)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "signal move-on to webchat:d (run run-3), stopped after 1 of 3 run(s); run it again")
}

// This build's own releases: the one before chat-session is deleted. Its
// open runs, should any be left, have no worker here, so --move-on does
// not wake them, and the listing says how to reach them; the runs that
// moved on from it are still asked.
func TestADeletedReleaseIsListedAndItsRunsAreNotWoken(t *testing.T) {
	releases := workflows.Releases()
	require.True(t, releases[0].Live)
	deleted := releases[1]
	require.True(t, deleted.Deleted(), "%+v", deleted)
	f := &fakeReleases{counts: map[string]int64{openRunsQuery(deleted.WorkflowType): 1}, pageSize: 2,
		before: map[string]string{}, types: map[string]string{}, closed: map[string]bool{}, failing: map[string]bool{}}
	f.live("webchat:b", deleted.WorkflowType)
	f.retiring = []*workflowpb.WorkflowExecutionInfo{{Execution: &commonpb.WorkflowExecution{WorkflowId: "webchat:f", RunId: "old-f"}}}

	var out strings.Builder
	moved, err := listReleases(context.Background(), f, releases, &out)
	require.NoError(t, err)
	assert.Contains(t, out.String(), "session: deleted, yet 1 open run(s), which no worker of this build serves")
	assert.Contains(t, out.String(), "1 open run(s) of the live release began as a move from session")
	require.NoError(t, moveOn(context.Background(), f, releases, moved, "ops", "why", &noPace{}, &out))
	assert.Equal(t, []string{"move-on webchat:b run-0 ops"}, f.signalled, "only the moved run is asked")

	f.counts[openRunsQuery(deleted.WorkflowType)] = 0
	f.open, f.before = nil, map[string]string{}
	out.Reset()
	_, err = listReleases(context.Background(), f, releases, &out)
	require.NoError(t, err)
	assert.Contains(t, out.String(), "session: deleted, no open run.")
	assert.Contains(t, out.String(), "No open run of the live release began as a move from session: delete "+deleted.MovedCode)
}
