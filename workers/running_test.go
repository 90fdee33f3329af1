package workers

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"
)

func TestRunningActivitiesAreListedUntilTheyReturn(t *testing.T) {
	running := newRunningActivities()
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestActivityEnvironment()
	env.SetWorkerOptions(worker.Options{Interceptors: []interceptor.WorkerInterceptor{running}})
	var during []string
	env.RegisterActivityWithOptions(func(context.Context) error {
		during = running.list()
		return nil
	}, activity.RegisterOptions{Name: "Deliver"})

	_, err := env.ExecuteActivity("Deliver")
	require.NoError(t, err)
	assert.Equal(t, []string{"Deliver for default-test-workflow-id"}, during, "listed while it runs")
	assert.Empty(t, running.list(), "gone once it returned")
}
