package gateway

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/mocks"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/replyflow/replyflow/pipeline"
)

func execution(t *testing.T, id string, started time.Time, lastInbound *time.Time) *workflow.WorkflowExecutionInfo {
	t.Helper()
	e := &workflow.WorkflowExecutionInfo{Execution: &commonpb.WorkflowExecution{WorkflowId: id}, StartTime: timestamppb.New(started)}
	if lastInbound != nil {
		p, err := converter.GetDefaultDataConverter().ToPayload(*lastInbound)
		require.NoError(t, err)
		e.SearchAttributes = &commonpb.SearchAttributes{IndexedFields: map[string]*commonpb.Payload{"ReplyflowLastInboundAt": p}}
	}
	return e
}

func TestOpenSessionsPagesThroughVisibility(t *testing.T) {
	started := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	last := started.Add(time.Hour)
	c := &mocks.Client{}
	query := OpenSessionsQuery("discord")
	assert.Equal(t, `WorkflowType IN ("chat-session", "session") AND ExecutionStatus = 'Running' AND WorkflowId STARTS_WITH "session:discord:"`, query)
	first := &workflowservice.ListWorkflowExecutionsResponse{NextPageToken: []byte("page 2"), Executions: []*workflow.WorkflowExecutionInfo{
		execution(t, "session:discord:900:100", started, &last),
		execution(t, "not-a-session", started, nil),
	}}
	second := &workflowservice.ListWorkflowExecutionsResponse{Executions: []*workflow.WorkflowExecutionInfo{
		execution(t, "session:discord:900:101", started, nil),
	}}
	c.On("ListWorkflow", mock.Anything, mock.MatchedBy(func(r *workflowservice.ListWorkflowExecutionsRequest) bool {
		return r.Query == query && r.NextPageToken == nil
	})).Return(first, nil).Once()
	c.On("ListWorkflow", mock.Anything, mock.MatchedBy(func(r *workflowservice.ListWorkflowExecutionsRequest) bool {
		return r.Query == query && string(r.NextPageToken) == "page 2"
	})).Return(second, nil).Once()

	open, err := (&Sessions{Client: c}).OpenSessions(t.Context(), "discord")
	require.NoError(t, err)
	require.Len(t, open, 2)
	assert.Equal(t, pipeline.SessionKey{Channel: "discord", Account: "900", Chat: "100"}, open[0].Key)
	assert.True(t, last.Equal(open[0].LastInboundAt), "%s", open[0].LastInboundAt)
	assert.True(t, started.Equal(open[0].StartedAt))
	assert.Equal(t, "101", open[1].Key.Chat)
	assert.True(t, open[1].LastInboundAt.IsZero(), "no worker ran it")
	c.AssertExpectations(t)
}

func TestOpenSessionsReportsAFailedListing(t *testing.T) {
	c := &mocks.Client{}
	c.On("ListWorkflow", mock.Anything, mock.Anything).Return(nil, errors.New("unavailable"))
	_, err := (&Sessions{Client: c}).OpenSessions(t.Context(), "discord")
	assert.ErrorContains(t, err, "unavailable")
}
