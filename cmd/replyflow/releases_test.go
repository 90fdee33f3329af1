package main

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"

	"github.com/replyflow/replyflow/workflows"
)

type countsByQuery map[string]int64

func (c countsByQuery) CountWorkflow(_ context.Context, req *workflowservice.CountWorkflowExecutionsRequest) (*workflowservice.CountWorkflowExecutionsResponse, error) {
	return &workflowservice.CountWorkflowExecutionsResponse{Count: c[req.GetQuery()]}, nil
}

func TestReleasesSayWhatMayBeDeletedOnlyOnceNoRunIsOpen(t *testing.T) {
	releases := workflows.Releases()
	require.True(t, releases[0].Live)
	retiring := releases[1]

	var out strings.Builder
	counts := countsByQuery{openRunsQuery(releases[0].WorkflowType): 7, openRunsQuery(retiring.WorkflowType): 2}
	require.NoError(t, listReleases(context.Background(), counts, releases, &out))
	assert.Contains(t, out.String(), "chat-session: live, 7 open run(s)")
	assert.Contains(t, out.String(), "session: retiring, 2 open run(s)")
	assert.NotContains(t, out.String(), "Delete")

	out.Reset()
	counts[openRunsQuery(retiring.WorkflowType)] = 0
	require.NoError(t, listReleases(context.Background(), counts, releases, &out))
	assert.Contains(t, out.String(), "session: retired, no open run. Delete "+retiring.Code+" and "+retiring.Histories)
}
