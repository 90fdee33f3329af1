package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
	"github.com/replyflow/replyflow/workflows/session"
)

// These tests drive the debounce window's maximum wait, a decision in
// the first task of a run, and /stop during a context-overflow retry on
// a real server, and record their histories.

func TestSteadyChatterIsAnsweredAtTheDebounceMaximumWait(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Debounce = 300 * time.Millisecond
	cfg.DebounceMaxWait = 600 * time.Millisecond
	s := startStack(t, cfg)
	s.startWorker(&testModel{})
	chat := uniqueChat("chatter")
	events := subscribe(t, s.baseURL, chat)

	const sent = 15
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := range sent {
		<-tick.C
		code, resp := s.post(chat, fmt.Sprintf(`{"message_id":"c%d","sender_id":"alice","text":"word%d"}`, i, i))
		require.Equal(t, http.StatusAccepted, code, resp)
	}
	answered := 0
	events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool {
		if ev.Type == "message" {
			answered += strings.Count(ev.Text, "word")
		}
		return answered == sent
	})
	snap := s.state(chat)
	assert.GreaterOrEqual(t, snap.Counters.Turns, 2, "1.5 s of chatter every 100 ms, re-arming a 300 ms window, was cut at the 600 ms maximum wait")
	recordHistory(t, s.client, chat, "debounce_max_wait")
}

// A late double click can reach a run in its very first task: update with
// start delivers the update with the task that starts the run, as a
// continue-as-new's first task would.
func TestDecisionUpdateInTheFirstTaskOfARunIsAnswered(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Owners = []string{"webchat:boss"}
	s := startStack(t, cfg)
	s.startWorker(&testModel{})
	key := pipeline.SessionKey{Channel: "webchat", Chat: uniqueChat("late-click")}
	carried := &session.State{}
	carried.Proposals.Seq = 1
	carried.Proposals.Proposals = []session.Proposal{{ID: "p1", Call: pipeline.ToolCall{ID: "c1", Name: "pay"}, Requester: "webchat:alice",
		Status: workflows.ProposalApproved, DecidedBy: "webchat:boss", CreatedAt: time.Now(), ExpiresAt: time.Now().Add(time.Hour)}}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := s.client.NewWithStartWorkflowOperation(client.StartWorkflowOptions{
		ID: key.WorkflowID(), TaskQueue: cfg.TaskQueue, WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
	}, session.WorkflowName, session.Params{Session: key, State: carried})
	handle, err := s.client.UpdateWithStartWorkflow(ctx, client.UpdateWithStartWorkflowOptions{
		StartWorkflowOperation: start,
		UpdateOptions: client.UpdateWorkflowOptions{
			UpdateName: workflows.UpdateDecide, WaitForStage: client.WorkflowUpdateStageCompleted,
			Args: []any{pipeline.Decision{ID: "p1", Decision: pipeline.DecisionApprove, By: "webchat:boss"}},
		},
	})
	require.NoError(t, err, "the update is not refused as unknown")
	var answer string
	require.NoError(t, handle.Get(ctx, &answer))
	assert.Equal(t, "Proposal p1 approved by webchat:boss.", answer, "a repeat of the decision made is one decision")
	recordHistory(t, s.client, key.Chat, "update_first_task")
}

// overflowingModel says the conversation is too long until asked with a
// new transcript; then it works until the turn is stopped.
type overflowingModel struct {
	calls   atomic.Int32
	retried chan struct{}
}

func (*overflowingModel) Name() string { return "test/overflow" }

func (m *overflowingModel) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	if m.calls.Add(1) == 1 {
		return models.Completion{}, &models.Error{Type: pipeline.ErrContextOverflow, Status: 400, Model: "test/overflow"}
	}
	close(m.retried)
	<-ctx.Done()
	return models.Completion{}, ctx.Err()
}

func TestStopCancelsTheContextOverflowRetryAndClearsAtOnce(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.TurnHeartbeatTimeout = time.Second // the attempt learns of the stop at its next heartbeat
	s := startStack(t, cfg)
	model := &overflowingModel{retried: make(chan struct{})}
	s.startWorker(model)
	chat := uniqueChat("stop-retry")
	events := subscribe(t, s.baseURL, chat)

	code, resp := s.post(chat, `{"message_id":"m1","sender_id":"alice","text":"a very long question"}`)
	require.Equal(t, http.StatusAccepted, code, resp)
	receiveWithin(t, model.retried, "the context-overflow retry never started")
	code, resp = s.post(chat, `{"message_id":"s1","sender_id":"alice","text":"/stop"}`)
	require.Equal(t, http.StatusAccepted, code, resp)
	// The stop's answer and the clear of the stopped message go out
	// independently, in either order.
	seen := events.collectUntil(t, 30*time.Second, allSeen(isReplyTo("s1"), isClearOf("m1")))
	var answer []string
	for _, ev := range seen {
		if isReplyTo("s1")(ev) {
			answer = append(answer, ev.Text)
		}
	}
	assert.Equal(t, []string{pipeline.AbortedReply}, answer)
	require.Eventually(t, func() bool { return s.state(chat).Status == workflows.StatusIdle }, 30*time.Second, 50*time.Millisecond)
	snap := s.state(chat)
	require.NotNil(t, snap.LastTurn)
	assert.Equal(t, "aborted", snap.LastTurn.Outcome)
	assert.Equal(t, int32(2), model.calls.Load(), "the stopped retry was not tried again")
	recordHistory(t, s.client, chat, "stop_overflow_retry")
}
