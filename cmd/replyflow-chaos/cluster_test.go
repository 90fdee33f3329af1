package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	workflowpb "go.temporal.io/api/workflow/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// The tests that need a real cluster but kill none of it share one node,
// started by the first of them and stopped after the last (TestMain).
var shared struct {
	once    sync.Once
	cluster *harness.Cluster
	err     error
	bin     string // today's replyflow
	dir     string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.cluster != nil {
		shared.cluster.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// sharedCluster is the package's one-node cluster and today's replyflow
// binary.
func sharedCluster(t *testing.T) (*harness.Cluster, string) {
	server := clusterBinary(t, "REPLYFLOW_TEST_TEMPORAL_SERVER", "temporal-server")
	sqlTool := clusterBinary(t, "REPLYFLOW_TEST_TEMPORAL_SQL_TOOL", "temporal-sql-tool")
	postgres := testPostgres(t)
	shared.once.Do(func() {
		shared.dir = harness.MustMkdirTemp("replyflow-cluster-tests-")
		if shared.bin, shared.err = harness.Build(shared.dir); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		shared.cluster, shared.err = harness.StartCluster(ctx, harness.ClusterOptions{
			Server: server, SQLTool: sqlTool, Postgres: postgres, Nodes: 1, Dir: shared.dir,
		})
	})
	require.NoError(t, shared.err)
	return shared.cluster, shared.bin
}

// startProc starts p and stops it when the test ends.
func startProc(t *testing.T, p *harness.Proc) {
	t.Helper()
	require.NoError(t, p.Start())
	t.Cleanup(p.Stop)
}

// telegramChat talks in one private chat of a fake Bot API.
type telegramChat struct {
	fake *telegramtest.Server
	chat telegramtest.Chat
}

func (c telegramChat) say(text string) int {
	return c.fake.AddMessage(telegramtest.Incoming{Chat: c.chat, From: telegramtest.User{ID: c.chat.ID, FirstName: "Tess"}, Text: text})
}

// answers are the bot's messages in the chat that reply to msg.
func (c telegramChat) answers(msg int) []telegramtest.Message {
	var out []telegramtest.Message
	for _, m := range c.fake.Sent(c.chat.ID) {
		if m.ReplyTo == msg {
			out = append(out, m)
		}
	}
	return out
}

// awaitAnswer waits, up to a minute, for the bot's answer to msg.
func (c telegramChat) awaitAnswer(t *testing.T, msg int) telegramtest.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, c.fake.WaitFor(ctx, func() bool { return len(c.answers(msg)) > 0 }), "chat %d: no answer to message %d", c.chat.ID, msg)
	return c.answers(msg)[0]
}

// sessionHistory is what the tests read of a session run's events.
type sessionHistory struct {
	// failedTasks are workflow tasks that failed: a nondeterminism, a
	// panic. A continue-as-new that met a signal arriving in the same
	// moment is not one of them: the server refuses that completion
	// (UnhandledCommand) by design and runs the task again with the
	// signal; raced counts those.
	failedTasks, raced int
	// failures say why each counted task failed.
	failures []string
	// buildIDs are the builds that completed its workflow tasks, in order.
	buildIDs []string
}

// historyOfRun reads every event of one run of the session ("" its
// latest).
func historyOfRun(t *testing.T, c client.Client, key pipeline.SessionKey, runID string) sessionHistory {
	t.Helper()
	var h sessionHistory
	iter := c.GetWorkflowHistory(context.Background(), key.WorkflowID(), runID, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		switch ev.GetEventType() {
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_FAILED:
			if ev.GetWorkflowTaskFailedEventAttributes().GetCause() == enumspb.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND {
				h.raced++
				continue
			}
			h.failedTasks++
			a := ev.GetWorkflowTaskFailedEventAttributes()
			h.failures = append(h.failures, a.GetCause().String()+": "+a.GetFailure().GetMessage())
		case enumspb.EVENT_TYPE_WORKFLOW_TASK_COMPLETED:
			v := ev.GetWorkflowTaskCompletedEventAttributes().GetDeploymentVersion()
			if b := v.GetBuildId(); b != "" && (len(h.buildIDs) == 0 || h.buildIDs[len(h.buildIDs)-1] != b) {
				h.buildIDs = append(h.buildIDs, b)
			}
		}
	}
	return h
}

// runsOf lists the session's runs, oldest first, once visibility shows at
// least atLeast of them.
func runsOf(t *testing.T, c client.Client, key pipeline.SessionKey, atLeast int) []*workflowpb.WorkflowExecutionInfo {
	t.Helper()
	var runs []*workflowpb.WorkflowExecutionInfo
	require.Eventually(t, func() bool {
		resp, err := c.ListWorkflow(context.Background(), &workflowservice.ListWorkflowExecutionsRequest{Query: fmt.Sprintf("WorkflowId = %q", key.WorkflowID())})
		if err != nil {
			return false
		}
		runs = slices.Clone(resp.Executions)
		slices.Reverse(runs) // visibility lists the newest first
		return len(runs) >= atLeast
	}, 10*time.Second, 100*time.Millisecond, "visibility lists %d runs of %s", atLeast, key.WorkflowID())
	return runs
}
