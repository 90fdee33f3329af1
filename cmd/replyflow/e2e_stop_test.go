package main

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
)

// finishingAfterStop is a model call still running when its worker is told
// to stop, as at every deploy: it answers only once the worker began to
// stop and the test let it go.
type finishingAfterStop struct {
	once     sync.Once
	started  chan struct{} // closed when the call began
	stopping chan struct{} // receives when the call saw the worker stop
	release  chan struct{}
}

func (*finishingAfterStop) Name() string { return "test/deploy" }

func (m *finishingAfterStop) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	m.once.Do(func() { close(m.started) })
	select {
	case <-activity.GetWorkerStopChannel(ctx):
		m.stopping <- struct{}{}
	case <-ctx.Done():
		return models.Completion{}, ctx.Err()
	}
	select {
	case <-m.release:
	case <-ctx.Done():
	}
	// A call cancelled by the stop fails, whatever raced with it.
	if err := ctx.Err(); err != nil {
		return models.Completion{}, err
	}
	return models.Completion{Text: "finished while the worker stopped"}, nil
}

// TestStoppedWorkerLetsTheRunningTurnFinish: a worker told to stop takes no
// new task but lets the model call it runs finish, and that call's answer
// is the reply: the turn is not run again by the next worker.
func TestStoppedWorkerLetsTheRunningTurnFinish(t *testing.T) {
	cfg := testConfig(t)
	cfg.ShutdownGrace = time.Minute
	s := startStack(t, cfg)
	model := &finishingAfterStop{started: make(chan struct{}), stopping: make(chan struct{}, 1), release: make(chan struct{})}
	stopFirst := s.startWorker(model)
	chat := uniqueChat("deploy")
	events := subscribe(t, s.baseURL, chat)

	code, body := s.post(chat, `{"message_id":"d1","sender_id":"alice","text":"deploy now"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	receiveWithin(t, model.started, "the model call never started")
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		stopFirst()
	}()
	receiveWithin(t, model.stopping, "the running model call never saw its worker stop")
	select {
	case <-stopped:
		t.Fatal("the worker stopped while its model call was still running")
	default:
	}
	close(model.release)
	receiveWithin(t, stopped, "the worker did not stop once its model call finished")

	next := &testModel{started: make(chan string, 1)}
	s.startWorker(next)
	seen := events.collectUntil(t, 60*time.Second, isClearOf("d1"))
	assert.Equal(t, 1, countMessages(seen), "one reply")
	assert.Contains(t, summarize(seen, "d1"), "message finished while the worker stopped", "the stopped worker's answer is the reply")
	assert.Zero(t, len(next.started), "the next worker did not run the turn again")
	assert.Equal(t, []int32{1}, agentTurnAttempts(t, s, chat), "the model call completed at its first attempt")
}

// agentTurnAttempts lists the attempt of every AgentTurn activity the
// session's current run started.
func agentTurnAttempts(t *testing.T, s *stack, chat string) []int32 {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id := pipeline.SessionKey{Channel: "webchat", Chat: chat}.WorkflowID()
	turns := map[int64]bool{}
	var attempts []int32
	iter := s.client.GetWorkflowHistory(ctx, id, "", false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for iter.HasNext() {
		ev, err := iter.Next()
		require.NoError(t, err)
		if a := ev.GetActivityTaskScheduledEventAttributes(); a != nil && a.GetActivityType().GetName() == pipeline.ActivityAgentTurn {
			turns[ev.GetEventId()] = true
		}
		if a := ev.GetActivityTaskStartedEventAttributes(); a != nil && turns[a.GetScheduledEventId()] {
			attempts = append(attempts, a.GetAttempt())
		}
	}
	return attempts
}
