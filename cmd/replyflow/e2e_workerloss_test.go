package main

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/cmd/internal/harness"
	"github.com/replyflow/replyflow/pipeline"
)

// A turn whose worker is killed (SIGKILL, real processes) three times
// while the model thinks, one more time than the turn has rounds
// (REPLYFLOW_TURN_ATTEMPTS, 3): each lost worker only means asking the
// same model again on the next one, and the user gets the answer, not
// "no model could answer". (Before, each loss counted as the model's
// Timeout, and the short chaos run lost a message now and then when its
// kills fell three times on one turn.)
func TestATurnOutlivesThreeKilledWorkersInARow(t *testing.T) {
	t.Parallel()
	const answer = "The answer, after three workers died under it."
	steps := slices.Repeat([]modeltest.Step{{Text: "never seen", Latency: time.Minute}}, 3)
	r := newWorkerLossRig(t, "workerloss", "2s", append(steps, modeltest.Step{Text: answer})...)
	oa, fake, chat, startWorker := r.model, r.fake, r.chat, r.startWorker
	asked := func(requests int) func() bool {
		return func() bool { return len(oa.Requests()) >= requests }
	}

	worker := startWorker(1)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "a hard question"})
	for i := 1; i <= 3; i++ {
		// Each worker dies while the model is writing for it.
		require.Eventually(t, asked(i), time.Minute, 10*time.Millisecond, "the model was asked by worker %d", i)
		worker.Kill()
		worker = startWorker(i + 1)
	}
	waitOnFake(t, fake.WaitFor, "the answer", func() bool {
		got := botMessages(fake, chat)
		return len(got) > 0 && got[len(got)-1].Text == answer
	})

	got := botMessages(fake, chat)
	require.Len(t, got, 1, "one message: the answer, and no failure notice before it")
	assert.Len(t, oa.Requests(), 4, "the same model, asked once by each worker")

	c, err := harness.Dial(context.Background(), temporalServer.FrontendHostPort(), "")
	require.NoError(t, err)
	defer c.Close()
	recordHistoryOf(t, c, r.key(), "worker_lost_thrice")
}

// workerLossRig is a real gateway on a fake Telegram and real worker
// processes (started with startWorker, killed by the test) on a task
// queue of their own, asking a fake OpenAI that answers steps in turn.
type workerLossRig struct {
	model       *modeltest.Server
	fake        *telegramtest.Server
	chat        telegramtest.Chat
	startWorker func(n int) *harness.Proc
}

func newWorkerLossRig(t *testing.T, name, heartbeatTimeout string, steps ...modeltest.Step) *workerLossRig {
	t.Helper()
	return newWorkerLossRigWith(t, name, map[string]string{"TURN_HEARTBEAT_TIMEOUT": heartbeatTimeout}, steps...)
}

// newWorkerLossRigWith is newWorkerLossRig with settings (REPLYFLOW_
// names without the prefix) over the rig's: its heartbeat timeout is 2s
// unless settings has TURN_HEARTBEAT_TIMEOUT.
func newWorkerLossRigWith(t *testing.T, name string, settings map[string]string, steps ...modeltest.Step) *workerLossRig {
	t.Helper()
	dir := t.TempDir()
	bin, err := harness.Build(dir)
	require.NoError(t, err)
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	oa.Push(steps...)
	bot := uniqueTelegramID()
	fake := telegramtest.New(fmt.Sprintf("%d:%s", bot, name))
	t.Cleanup(fake.Close)
	vars := map[string]string{
		"MODEL": "openai/gpt-test", "STREAM": "off", "TURN_HEARTBEAT_TIMEOUT": "2s",
		"DEBOUNCE": "0s", "LOG_LEVEL": "info", "REACTION_CLEAR_DELAY": "1s",
	}
	maps.Copy(vars, settings)
	env := harness.Env(temporalServer.FrontendHostPort(), fmt.Sprintf("%s-%d", name, bot), filepath.Join(dir, "store.db"), fake, vars)
	env = append(env, "OPENAI_BASE_URL="+oa.URL+"/v1", "OPENAI_API_KEY=test")
	return &workerLossRig{model: oa, fake: fake, chat: telegramtest.Private(uniqueTelegramID()), startWorker: realProcesses(t, bin, dir, env)}
}

// key is the chat's session.
func (r *workerLossRig) key() pipeline.SessionKey {
	return pipeline.SessionKey{Channel: "telegram", Account: strconv.FormatInt(r.fake.Bot.ID, 10), Chat: strconv.FormatInt(r.chat.ID, 10)}
}

// A worker killed outright (SIGKILL) while the model writes for one of
// its sessions never gives the session back; the worker started after
// it releases it (workers.Unstick), so the task that follows the lost
// attempt's heartbeat timeout goes straight to the task queue every
// worker polls, and does not wait out the dead worker's sticky queue
// first (a WorkflowTaskTimedOut, schedule-to-start, in the history).
func TestAKilledWorkersSessionSkipsItsStickyQueue(t *testing.T) {
	t.Parallel()
	const answer = "The answer, from the worker started after the kill."
	// A heartbeat timeout far longer than a worker's start, so the new
	// worker has released the session before the lost attempt times out.
	r := newWorkerLossRig(t, "unstick", "8s", modeltest.Step{Text: "never seen", Latency: time.Minute}, modeltest.Step{Text: answer})
	oa, fake, chat, startWorker := r.model, r.fake, r.chat, r.startWorker

	worker := startWorker(1)
	fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "a hard question"})
	require.Eventually(t, func() bool { return len(oa.Requests()) >= 1 }, time.Minute, 10*time.Millisecond, "the model was asked")
	worker.Kill()
	startWorker(2)
	waitOnFake(t, fake.WaitFor, "the answer", func() bool {
		got := botMessages(fake, chat)
		return len(got) > 0 && got[len(got)-1].Text == answer
	})

	c, err := harness.Dial(context.Background(), temporalServer.FrontendHostPort(), "")
	require.NoError(t, err)
	defer c.Close()
	key := r.key()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var events []*historypb.HistoryEvent
	iter := c.GetWorkflowHistory(ctx, key.WorkflowID(), "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		events = append(events, ev)
	}
	timedOut := slices.IndexFunc(events, func(ev *historypb.HistoryEvent) bool {
		return ev.GetEventType() == enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT
	})
	require.GreaterOrEqual(t, timedOut, 0, "the lost attempt timed out (its heartbeat)")
	next := slices.IndexFunc(events[timedOut:], func(ev *historypb.HistoryEvent) bool {
		return ev.GetEventType() == enumspb.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED
	})
	require.GreaterOrEqual(t, next, 0, "a workflow task follows the timeout")
	assert.Equal(t, enumspb.TASK_QUEUE_KIND_NORMAL, events[timedOut+next].GetWorkflowTaskScheduledEventAttributes().GetTaskQueue().GetKind(),
		"the task after the timeout goes to the task queue every worker polls")
	for _, ev := range events {
		assert.NotEqual(t, enumspb.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT, ev.GetEventType(), "no task waited out a sticky queue (event %d)", ev.GetEventId())
	}
}

// slowModel answers after it thought for think, counting its calls.
type slowModel struct {
	think time.Duration
	calls atomic.Int32
}

func (*slowModel) Name() string { return "test/slow" }

func (m *slowModel) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	m.calls.Add(1)
	select {
	case <-ctx.Done():
		return models.Completion{}, ctx.Err()
	case <-time.After(m.think):
		return models.Completion{Text: "thought it through"}, nil
	}
}

// A model that thinks for three heartbeat timeouts, at the shortest
// heartbeat timeout the configuration accepts, is one call on a real
// server with the worker's own options: the attempt's heartbeats keep
// it alive, and no attempt times out.
func TestASlowModelIsNotTakenForALostWorker(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.TurnHeartbeatTimeout = minTurnHeartbeatTimeout
	cfg.TypingInterval = 0 // the heartbeats alone keep the attempt alive
	s := startStack(t, cfg)
	model := &slowModel{think: 3 * minTurnHeartbeatTimeout}
	s.startWorker(model)

	chat := uniqueChat("slow")
	events := subscribe(t, s.baseURL, chat)
	code, resp := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"think hard"}`)
	require.Equal(t, http.StatusAccepted, code, resp)
	reply := events.collectUntil(t, time.Minute, func(ev sseEvent) bool { return ev.Type == "message" })
	assert.Contains(t, reply[len(reply)-1].Text, "thought it through")
	assert.EqualValues(t, 1, model.calls.Load(), "the model was asked once")
	for _, ev := range s.history(pipeline.SessionKey{Channel: "webchat", Chat: chat}) {
		assert.NotEqual(t, enumspb.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT, ev.GetEventType(), "no attempt timed out (event %d)", ev.GetEventId())
	}
}
