package workers

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"golang.org/x/time/rate"
)

// fakeSticky lists open sessions page by page and records the releases.
type fakeSticky struct {
	open     int             // sessions listed, s0, s1, ...
	gone     map[string]bool // completed since they were listed
	failOn   string
	queries  []string
	released []string
}

func (f *fakeSticky) ListWorkflow(_ context.Context, req *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	f.queries = append(f.queries, req.GetQuery())
	from := 0
	if len(req.GetNextPageToken()) > 0 {
		from, _ = strconv.Atoi(string(req.GetNextPageToken()))
	}
	to := min(from+int(req.GetPageSize()), f.open)
	resp := &workflowservice.ListWorkflowExecutionsResponse{}
	for i := from; i < to; i++ {
		resp.Executions = append(resp.Executions, &workflowpb.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: "s" + strconv.Itoa(i), RunId: "r"}})
	}
	if to < f.open {
		resp.NextPageToken = []byte(strconv.Itoa(to))
	}
	return resp, nil
}

func (f *fakeSticky) ResetStickyTaskQueue(_ context.Context, req *workflowservice.ResetStickyTaskQueueRequest) error {
	id := req.GetExecution().GetWorkflowId()
	switch {
	case id == f.failOn:
		return serviceerror.NewUnavailable("the server is down")
	case f.gone[id]:
		return serviceerror.NewNotFound("workflow execution already completed")
	}
	f.released = append(f.released, id)
	return nil
}

var unpaced = rate.NewLimiter(rate.Inf, 1)

// Every open session of the task queue is released, over several
// pages; one that completed since it was listed is passed over.
func TestUnstickReleasesEveryOpenSessionOfTheTaskQueue(t *testing.T) {
	f := &fakeSticky{open: unstickPage + 3, gone: map[string]bool{"s1": true}}
	n, err := unstick(context.Background(), f, "q", unpaced)
	require.NoError(t, err)
	assert.Equal(t, unstickPage+2, n)
	assert.Len(t, f.released, unstickPage+2)
	assert.NotContains(t, f.released, "s1")
	assert.Contains(t, f.released, "s"+strconv.Itoa(unstickPage+2), "the second page too")
	require.NotEmpty(t, f.queries)
	assert.Contains(t, f.queries[0], `TaskQueue = "q"`)
	assert.Contains(t, f.queries[0], `ExecutionStatus = "Running"`)
}

// One worker start releases at most MaxUnstuck sessions.
func TestUnstickIsBounded(t *testing.T) {
	f := &fakeSticky{open: MaxUnstuck + unstickPage}
	n, err := unstick(context.Background(), f, "q", unpaced)
	require.NoError(t, err)
	assert.Equal(t, MaxUnstuck, n)
	assert.Len(t, f.released, MaxUnstuck)
}

// A release the server refuses stops the pass and says which session.
func TestUnstickStopsOnAnError(t *testing.T) {
	f := &fakeSticky{open: 10, failOn: "s4"}
	n, err := unstick(context.Background(), f, "q", unpaced)
	var unavailable *serviceerror.Unavailable
	require.True(t, errors.As(err, &unavailable), "got %v", err)
	assert.Contains(t, err.Error(), "s4")
	assert.Equal(t, 4, n)
}
