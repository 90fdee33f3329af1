package main

import (
	"context"
	"flag"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"

	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// upgradeChange is the change version A is built without: the newest of
// workflows/versions.go, whose turns put the reply prefix in front of a
// reply (REPLYFLOW_REPLY_PREFIX); A's turns do not. It names the release
// folder the upgrade's history is recorded in, too.
const upgradeChange = "control-2026-11"

var recordTo = flag.String("record-histories", "", "write the rolling upgrade's history as gzip-compressed JSON into this folder's release folder (make record-histories)")

// The README's Upgrading procedure on a real server: sessions run on two
// workers of version A (built as the release before upgradeChange); two
// workers of version B (today's code) start beside them, an operator makes
// B current with the Temporal CLI while every session has a turn in
// flight on A, and the A workers are drained (SIGTERM). Every open session
// finishes its turn on B, then runs its next one there, with no workflow
// task failure; a session started under A keeps A's behaviour (no prefix,
// the change is behind workflow.GetVersion) for the turn in flight, then
// continues as new at its first quiet point on B and takes the change, as
// a session started under B does.
func TestRollingUpgradeMovesOpenSessionsToTheNewVersion(t *testing.T) {
	cluster, binB := sharedCluster(t)
	cli := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../bin/temporal")
	}
	dir := t.TempDir()
	binA, err := harness.BuildAs(dir, "replyflow-a", "-X github.com/replyflow/replyflow/workflows.BuiltBefore="+upgradeChange)
	require.NoError(t, err)
	ctx := context.Background()
	store, err := cluster.NewDatabase(ctx, "upgrade")
	require.NoError(t, err)
	fake := telegramtest.New("4343:upgrade")
	defer fake.Close()

	const deployment = "upgrade-test"
	common := map[string]string{
		"DEPLOYMENT_NAME": deployment, "REPLY_PREFIX": "[{model}] ",
		// A turn long enough to be caught in flight by the upgrade.
		"DEMO_MODEL_DELAY": "3s", "DEBOUNCE": "0", "TYPING_INTERVAL": "1s",
		"LOG_LEVEL": "info",
	}
	env := func(build, promote string) []string {
		vars := maps.Clone(common)
		vars["BUILD_ID"], vars["PROMOTE"] = build, promote
		return harness.Env(cluster.Address, "upgrade", store, fake, vars)
	}
	var workersA []*harness.Proc
	for _, name := range []string{"a1", "a2"} {
		p := harness.Worker(binA, env("a", "first"), filepath.Join(dir, name+".log"))
		p.Name = name
		startProc(t, p)
		workersA = append(workersA, p)
	}
	c, err := harness.Dial(ctx, cluster.Address, "")
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, harness.AwaitCurrentVersion(ctx, c, deployment, "a"), "the first version makes itself current (REPLYFLOW_PROMOTE=first)")
	gateway, err := harness.Gateway(binB, env("b", "never"), filepath.Join(dir, "gateway.log"))
	require.NoError(t, err)
	startProc(t, gateway)

	// Sessions opened under A answer as A does.
	var chats []telegramChat
	for i := range 4 {
		chats = append(chats, telegramChat{fake, telegramtest.Private(int64(8_100_000 + i))})
	}
	for _, chat := range chats {
		reply := chat.awaitAnswer(t, chat.say("one"))
		assert.False(t, prefixed(reply.Text), "version A has no reply prefix: %q", reply.Text)
	}

	// Each session has a turn in flight on A ...
	inFlight := make([]int, len(chats))
	typed := make([]int, len(chats))
	for i, chat := range chats {
		typed[i] = chat.typingCalls()
		inFlight[i] = chat.say("two")
	}
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	require.NoError(t, fake.WaitFor(waitCtx, func() bool {
		for i, chat := range chats {
			if chat.typingCalls() == typed[i] {
				return false
			}
		}
		return true
	}), "every session's second turn is running on A")

	// ... when B starts, is made current, and A is drained. B's workers
	// are not ready (/readyz) until B is current: an orchestrator's
	// rolling update waits for the operator there, the old workers serving.
	ports, err := harness.FreePorts(2)
	require.NoError(t, err)
	var readyz []string
	for i, name := range []string{"b1", "b2"} {
		metrics := "127.0.0.1:" + strconv.Itoa(ports[i])
		startProc(t, harness.Worker(binB, append(env("b", "never"), "REPLYFLOW_METRICS_ADDR="+metrics), filepath.Join(dir, name+".log")))
		readyz = append(readyz, "http://"+metrics+"/readyz")
	}
	for _, url := range readyz {
		assert.Equal(t, http.StatusServiceUnavailable, awaitStatus(t, url, http.StatusServiceUnavailable), "a worker of a version that is not current is not ready")
	}
	setCurrent(t, cli, cluster.Address, deployment, "b")
	for _, url := range readyz {
		assert.Equal(t, http.StatusOK, awaitStatus(t, url, http.StatusOK), "once current, it is")
	}
	for _, p := range workersA {
		p.Stop() // SIGTERM: the running model calls finish first
		assert.False(t, p.Running())
		log, _ := os.ReadFile(filepath.Join(dir, p.Name+".log"))
		assert.Contains(t, string(log), "every activity it ran has finished", "worker %s was drained, not cut off", p.Name)
	}

	// The turns in flight end on B, as A would have ended them.
	for i, chat := range chats {
		reply := chat.awaitAnswer(t, inFlight[i])
		assert.Contains(t, reply.Text, "You said: two")
		assert.False(t, prefixed(reply.Text), "a session started under A keeps A's behaviour for the turn in flight: %q", reply.Text)
	}
	// Their next turns run on B as B's: once the turn in flight is done,
	// the run that began under A starts no other turn and continues as
	// new (as soon as no reaction or reply is in flight), into a run that
	// takes every change. "three" is sent the moment "two" is answered,
	// often before the session took the delivery's result: it is queued
	// behind the turn, or its 👀 is in flight as the turn ends.
	for _, chat := range chats {
		reply := chat.awaitAnswer(t, chat.say("three"))
		assert.True(t, prefixed(reply.Text), "a run that began under A moves on to B's behaviour after its turn in flight: %q", reply.Text)
	}
	// A session that starts now takes the change.
	fresh := telegramChat{fake, telegramtest.Private(8_199_999)}
	reply := fresh.awaitAnswer(t, fresh.say("hello"))
	assert.True(t, prefixed(reply.Text), "a session started under B takes the change: %q", reply.Text)

	if *recordTo != "" {
		// A session's history that began on A and goes on on B: the replay
		// test keeps it replaying.
		key := pipeline.SessionKey{Channel: telegram.Channel, Account: "4343", Chat: strconv.FormatInt(chats[0].chat.ID, 10)}
		_, err := harness.RecordHistory(ctx, c, key.WorkflowID(), filepath.Join(*recordTo, upgradeChange), "rolling_upgrade_moves_on")
		require.NoError(t, err)
	}
	for _, chat := range append(chats, fresh) {
		key := pipeline.SessionKey{Channel: telegram.Channel, Account: "4343", Chat: strconv.FormatInt(chat.chat.ID, 10)}
		want := 2 // the run begun on A, and the one it continued as
		if chat == fresh {
			want = 1
		}
		runs := runsOf(t, c, key, want)
		for _, run := range runs {
			h := historyOfRun(t, c, key, run.Execution.RunId)
			assert.Zero(t, h.failedTasks, "%s: workflow task failures: %q", key.WorkflowID(), h.failures)
			require.NotEmpty(t, h.buildIDs, key.WorkflowID())
			assert.Equal(t, "b", h.buildIDs[len(h.buildIDs)-1], "%s ends on B (its tasks ran on %v)", key.WorkflowID(), h.buildIDs)
		}
		if chat != fresh {
			require.Len(t, runs, 2, "%s: the run begun on A, and the one it continued as", key.WorkflowID())
			assert.Equal(t, "a", historyOfRun(t, c, key, runs[0].Execution.RunId).buildIDs[0], "%s began on A", key.WorkflowID())
			assert.Equal(t, enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW, runs[0].Status, "%s moved on", key.WorkflowID())
			assert.Equal(t, []string{"b"}, historyOfRun(t, c, key, runs[1].Execution.RunId).buildIDs, "%s then runs on B alone", key.WorkflowID())
		}
		desc, err := c.DescribeWorkflowExecution(ctx, key.WorkflowID(), "")
		require.NoError(t, err)
		info := desc.GetWorkflowExecutionInfo().GetVersioningInfo()
		assert.Equal(t, enumspb.VERSIONING_BEHAVIOR_AUTO_UPGRADE, info.GetBehavior(), key.WorkflowID())
		assert.Equal(t, "b", info.GetDeploymentVersion().GetBuildId(), key.WorkflowID())
	}
}

// awaitStatus polls url, up to 30 s, until it answers want, and returns
// the last status (0 when it never answered).
func awaitStatus(t *testing.T, url string, want int) int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := 0
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if last = resp.StatusCode; last == want {
				return last
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return last
}

// setCurrent runs the README's command that makes a version current,
// again until the server knows the version (its workers' first polls
// register it).
func setCurrent(t *testing.T, cli, address, deployment, build string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		out, err := exec.Command(cli, "worker", "deployment", "set-current-version", "--address", address,
			"--deployment-name", deployment, "--build-id", build, "--yes").CombinedOutput()
		if err == nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "temporal worker deployment set-current-version: %v\n%s", err, out)
		if !strings.Contains(string(out), "not") && !strings.Contains(string(out), "ailed") {
			t.Logf("set-current-version: %s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
