package workers

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/serviceerror"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
)

type fakeRuns struct {
	count   int64
	err     error
	queries []string
}

func (f *fakeRuns) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	f.queries = append(f.queries, req.GetQuery())
	return &workflowservice.CountWorkflowExecutionsResponse{Count: f.count}, f.err
}

func (f *fakeRuns) ListWorkflow(context.Context, *workflowservice.ListWorkflowExecutionsRequest) (*workflowservice.ListWorkflowExecutionsResponse, error) {
	return &workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflowpb.WorkflowExecutionInfo{{
		Type: &commonpb.WorkflowType{Name: "session"}, Execution: &commonpb.WorkflowExecution{WorkflowId: "session:webchat:room"},
	}}}, nil
}

func TestAWorkerDoesNotStartBesideOpenRunsOfATypeItDoesNotServe(t *testing.T) {
	quiet := slog.New(slog.DiscardHandler)
	f := &fakeRuns{}
	require.NoError(t, CheckServedTypes(context.Background(), f, "replyflow", ServedWorkflowTypes(), quiet))
	assert.Equal(t, []string{`TaskQueue = "replyflow" AND ExecutionStatus = "Running" AND WorkflowType NOT IN ("chat-session", "heartbeatTick")`}, f.queries)

	f.count = 3
	err := CheckServedTypes(context.Background(), f, "replyflow", []string{"chat-session"}, quiet)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "3 open run(s) on task queue replyflow are of a workflow type this build does not serve (session, e.g. session:webchat:room)")
	assert.Contains(t, err.Error(), "`replyflow releases --move-on`")

	f.err = serviceerror.NewInvalidArgument("unsupported operator")
	assert.NoError(t, CheckServedTypes(context.Background(), f, "replyflow", nil, quiet), "a visibility that cannot answer is passed, with a warning")
	f.err = errors.New("unavailable")
	assert.Error(t, CheckServedTypes(context.Background(), f, "replyflow", nil, quiet), "any other failure stops the start")
}
