package main

import (
	"context"
	"flag"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// upgradeRelease is the live release's folder of recorded histories,
// where the rolling upgrade's history is recorded.
const upgradeRelease = "chat-2026-11"

var recordTo = flag.String("record-histories", "", "write the rolling upgrade's history as gzip-compressed JSON into this folder's release folder (make record-histories)")

// The upgrade procedure of docs/upgrading.md on a real server: sessions
// run on two workers (and a gateway) of version A; two workers of
// version B start beside them, an operator makes B current with the
// Temporal CLI while every session has a turn in flight on A, the A
// workers are drained (SIGTERM) and the gateway is replaced by B's. A
// and B are two builds of the live release (this one binary under two
// build IDs), as a deployment that changes no workflow code rolls out.
// Every open session finishes its turn on B with no workflow task
// failure, in the run it began, keeping what it held: the chat's
// settings (/usage tokens: the usage footer), the clear it owes on its
// last answered message, and the message that waited in its queue,
// which B answers once; the model's next prompt still holds the chat's
// earlier turns. A session whose tool call waits for approval on A runs
// the tool once and answers once when the decision comes on B. A
// session that starts now starts on B.
func TestRollingUpgradeMovesOpenSessionsToTheNewVersion(t *testing.T) {
	cluster, binB := sharedCluster(t)
	cli := os.Getenv("REPLYFLOW_TEST_TEMPORAL_CLI")
	if cli == "" {
		cli, _ = filepath.Abs("../../bin/temporal")
	}
	dir := t.TempDir()
	toolsFile, payments := payTool(t, dir)
	binA := binB
	ctx := context.Background()
	store, err := cluster.NewDatabase(ctx, "upgrade")
	require.NoError(t, err)
	fake := telegramtest.New("4343:upgrade")
	defer fake.Close()

	// The model answers at once, except the turns the upgrade must catch
	// in flight: the test holds those until B is current.
	model := modeltest.NewOpenAI()
	defer model.Close()

	const deployment = "upgrade-test"
	common := map[string]string{
		"DEPLOYMENT_NAME": deployment, "REPLY_PREFIX": "[{model}] ",
		"MODEL": "openai/gpt-test", "STREAM": "off", "DEBOUNCE": "0", "TYPING_INTERVAL": "1s",
		// Clears owed across the upgrade, for the carried state to keep.
		"REACTION_CLEAR_DELAY": "10m",
		"LOG_LEVEL":            "info",
		"TOOLS_FILE":           toolsFile,
	}
	env := func(build, promote string) []string {
		vars := maps.Clone(common)
		vars["BUILD_ID"], vars["PROMOTE"] = build, promote
		return append(harness.Env(cluster.Address, "upgrade", store, fake, vars), "OPENAI_BASE_URL="+model.URL+"/v1", "OPENAI_API_KEY=test")
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
	gatewayA, err := harness.Gateway(binA, env("a", "never"), filepath.Join(dir, "gateway-a.log"))
	require.NoError(t, err)
	startProc(t, gatewayA)

	// Sessions opened under A, with a chat setting of their own.
	var chats []telegramChat
	for i := range 4 {
		chats = append(chats, telegramChat{fake, telegramtest.Private(int64(8_100_000 + i))})
	}
	for _, chat := range chats {
		chat.awaitAnswer(t, chat.say("/usage tokens"))
		reply := chat.awaitAnswer(t, chat.say("one"))
		assert.True(t, usageFooter(reply.Text), "/usage tokens holds on A: %q", reply.Text)
	}
	// And one whose agent asks, on A, to call a tool that needs approval:
	// the proposal still waits for a decision when B becomes current.
	payer := telegramChat{fake, telegramtest.Private(8_100_100)}
	model.Push(payCall)
	payRequest := payer.say("pay bob 5")
	proposal := payer.awaitProposal(t, payRequest)
	awaitState(t, c, sessionKeyOf(fake, payer), "the turn waits for the decision on p1", func(s workflows.Snapshot) bool {
		return s.Active != nil && s.Active.Phase == workflows.PhaseWaiting && len(s.Proposals) == 1 && s.Proposals[0].Status == workflows.ProposalPending
	})

	// Each session has a turn in flight on A: its model call waits for
	// the release below, which comes once B is current; the answers
	// then take a moment more, so A's workers are stopped with the
	// calls still running.
	release := make(chan struct{})
	model.Push(slices.Repeat([]modeltest.Step{{Hold: release, Latency: time.Second}}, len(chats))...)
	asked := len(model.Requests())
	inFlight := make([]int, len(chats))
	for i, chat := range chats {
		inFlight[i] = chat.say("two")
	}
	require.Eventually(t, func() bool { return len(model.Requests()) == asked+len(chats) }, 30*time.Second, 50*time.Millisecond,
		"every session's second turn is asking the model on A")
	// Meanwhile each chat says more: it waits in the session's queue
	// (REPLYFLOW_QUEUE_MODE followup) for the turn in flight to end.
	queued := make([]int, len(chats))
	for i, chat := range chats {
		queued[i] = chat.say("queued")
	}
	for i, chat := range chats {
		awaitState(t, c, sessionKeyOf(fake, chat), "the message waits in the queue on A", func(s workflows.Snapshot) bool {
			return slices.ContainsFunc(s.Queued, func(b workflows.BatchView) bool { return slices.Contains(b.MessageIDs, strconv.Itoa(queued[i])) })
		})
	}

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
	close(release)
	for _, p := range workersA {
		p.Stop() // SIGTERM: the running model calls finish first
		assert.False(t, p.Running())
		log, _ := os.ReadFile(filepath.Join(dir, p.Name+".log"))
		assert.Contains(t, string(log), "every activity it ran has finished", "worker %s was drained, not cut off", p.Name)
	}
	gatewayA.Stop()
	gatewayB, err := harness.Gateway(binB, env("b", "never"), filepath.Join(dir, "gateway-b.log"))
	require.NoError(t, err)
	startProc(t, gatewayB)

	// The turns in flight end on B, in the runs they began in.
	for i, chat := range chats {
		reply := chat.awaitAnswer(t, inFlight[i])
		assert.Regexp(t, `^\[openai/gpt-test\] echo: \[telegram [^]]*\] two\n`, reply.Text)
		assert.True(t, usageFooter(reply.Text), "the chat's setting holds: %q", reply.Text)
	}
	// Each session keeps what it held: the setting, the clear it owes on
	// "two", and the queued message, which B answers, once and in order;
	// the model is asked about it once, and the chat's earlier turns are
	// still in its prompt.
	for i, chat := range chats {
		key := sessionKeyOf(fake, chat)
		snap := stateOf(t, c, key)
		assert.True(t, slices.ContainsFunc(snap.Reactions, func(r workflows.Reaction) bool {
			return r.MessageID == strconv.Itoa(inFlight[i]) && !r.ClearAt.IsZero()
		}), "%s owes the clear of the ✅ on two: %+v", key.WorkflowID(), snap.Reactions)
		answer := chat.awaitAnswer(t, queued[i])
		assert.Regexp(t, `^\[openai/gpt-test\] echo: \[telegram [^]]*\] queued\n`, answer.Text)
		reply := chat.awaitAnswer(t, chat.say("three"))
		assert.True(t, usageFooter(reply.Text), "the setting holds on B: %q", reply.Text)
		assert.Len(t, chat.answers(queued[i]), 1, "%s answers the queued message once", key.WorkflowID())
		assert.Less(t, chat.answers(inFlight[i])[0].ID, answer.ID, "%s: two is answered before the queued message", key.WorkflowID())
		assert.Less(t, answer.ID, reply.ID, "%s: the queued message is answered before three", key.WorkflowID())
		assert.Len(t, asking(model, chat, "queued"), 1, "%s asks the model about the queued message once", key.WorkflowID())
		if prompts := asking(model, chat, "three"); assert.Len(t, prompts, 1, key.WorkflowID()) {
			assert.Equal(t, []string{
				"user: one", "assistant: one", "user: two", "assistant: two", "user: queued", "assistant: queued", "user: three",
			}, turnsOf(prompts[0]), "%s: the model's prompt holds the chat's turns from before the upgrade", key.WorkflowID())
		}
	}

	// The session whose proposal waits: the decision taken after the
	// upgrade runs the tool once on B and the answer goes out once.
	payKey := sessionKeyOf(fake, payer)
	assert.Zero(t, payments.Load(), "nothing is paid before the decision")
	press := fake.AddCallbackQuery(payer.user(), payer.chat.ID, proposal.ID, proposal.Buttons[0][0].Data)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	require.NoError(t, fake.WaitFor(waitCtx, func() bool { return len(payer.answers(payRequest)) > 1 }), "the answer after the approval")
	paid := payer.answers(payRequest)[1]
	assert.Regexp(t, `^\[openai/gpt-test\] echo: \[telegram [^]]*\] pay bob 5$`, paid.Text)
	answered, _ := fake.Answered(press)
	assert.True(t, answered, "the press is answered")
	decided := func(p workflows.Proposal) bool {
		return p.ID == "p1" && p.Status == workflows.ProposalApproved && p.DecidedBy == "telegram:"+strconv.FormatInt(payer.chat.ID, 10) &&
			p.Call.Name == "pay" && p.Origin == strconv.Itoa(payRequest)
	}
	snap := stateOf(t, c, payKey)
	assert.True(t, slices.ContainsFunc(snap.Proposals, decided), "the session shows the decided proposal: %+v", snap.Proposals)
	edited, _ := fake.Message(payer.chat.ID, proposal.ID)
	assert.Empty(t, edited.Buttons, "a decided proposal loses its buttons")
	assert.Contains(t, edited.Text, "Approved by telegram:"+strconv.FormatInt(payer.chat.ID, 10))
	after := payer.awaitAnswer(t, payer.say("after"))
	assert.Regexp(t, `^\[openai/gpt-test\] echo: \[telegram [^]]*\] after$`, after.Text)
	assert.Equal(t, int32(1), payments.Load(), "the approved tool ran exactly once")
	assert.Len(t, payer.answers(payRequest), 2, "the request is answered by its proposal and one reply")
	assert.Len(t, asking(model, payer, "pay bob 5"), 2, "the model is asked about the request twice: for the call, then with its result")
	if prompts := asking(model, payer, "pay bob 5"); len(prompts) == 2 {
		assert.True(t, slices.ContainsFunc(prompts[1].Messages, func(m string) bool {
			return strings.HasPrefix(m, "tool: ") && strings.Contains(m, `{"paid":true}`)
		}), "the second ask carries the tool's result: %q", prompts[1].Messages)
	}
	if prompts := asking(model, payer, "after"); assert.Len(t, prompts, 1) {
		assert.Equal(t, []string{"user: pay bob 5", "assistant: pay bob 5", "user: after"}, turnsOf(prompts[0]),
			"the model's prompt holds the turn from before the upgrade")
	}
	// A session that starts now starts on B.
	fresh := telegramChat{fake, telegramtest.Private(8_199_999)}
	reply := fresh.awaitAnswer(t, fresh.say("hello"))
	assert.Regexp(t, `^\[openai/gpt-test\] echo: \[telegram [^]]*\] hello$`, reply.Text)

	if *recordTo != "" {
		// A session's history that began on A and goes on on B, its turn
		// and its queue carried across: the replay test keeps it
		// replaying.
		key := pipeline.SessionKey{Channel: telegram.Channel, Account: "4343", Chat: strconv.FormatInt(chats[0].chat.ID, 10)}
		_, err := harness.RecordHistory(ctx, c, key.WorkflowID(), filepath.Join(*recordTo, upgradeRelease), "rolling_upgrade")
		require.NoError(t, err)
	}
	for _, chat := range append(chats, payer, fresh) {
		key := pipeline.SessionKey{Channel: telegram.Channel, Account: "4343", Chat: strconv.FormatInt(chat.chat.ID, 10)}
		runs := runsOf(t, c, key, 1)
		require.Len(t, runs, 1, "%s: one run, across the upgrade", key.WorkflowID())
		assert.Equal(t, workflows.ChatSessionName, runs[0].GetType().GetName(), key.WorkflowID())
		h := historyOfRun(t, c, key, runs[0].Execution.RunId)
		assert.Zero(t, h.failedTasks, "%s: workflow task failures: %q", key.WorkflowID(), h.failures)
		require.NotEmpty(t, h.buildIDs, key.WorkflowID())
		assert.Equal(t, "b", h.buildIDs[len(h.buildIDs)-1], "%s ends on B (its tasks ran on %v)", key.WorkflowID(), h.buildIDs)
		if chat != fresh {
			assert.Equal(t, "a", h.buildIDs[0], "%s began on A", key.WorkflowID())
		} else {
			assert.Equal(t, []string{"b"}, h.buildIDs, "%s runs on B alone", key.WorkflowID())
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

// setCurrent runs docs/upgrading.md's command that makes a version
// current, again until the server knows the version (its workers' first
// polls register it).
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

// usageFooter: a reply carries the usage footer /usage tokens asks for.
func usageFooter(text string) bool { return strings.Contains(text, "\n\n— ") }

// sessionKeyOf is a Telegram chat's session with the test's bot.
func sessionKeyOf(fake *telegramtest.Server, chat telegramChat) pipeline.SessionKey {
	return pipeline.SessionKey{Channel: telegram.Channel, Account: strconv.FormatInt(fake.Bot.ID, 10), Chat: strconv.FormatInt(chat.chat.ID, 10)}
}

// stateOf is the session's answer to the state query.
func stateOf(t *testing.T, c client.Client, key pipeline.SessionKey) workflows.Snapshot {
	t.Helper()
	var snap workflows.Snapshot
	require.Eventually(t, func() bool {
		v, err := c.QueryWorkflow(context.Background(), key.WorkflowID(), "", workflows.QueryState)
		return err == nil && v.Get(&snap) == nil
	}, 30*time.Second, 200*time.Millisecond, "the state of %s", key.WorkflowID())
	return snap
}
