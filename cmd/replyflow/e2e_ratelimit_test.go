package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"

	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
)

// The gateway's inbound rate limits, on a real server: a sender's burst is
// answered, and what comes after it is refused at the door with 429,
// before it costs a signal.
func TestRateLimitAnswersTheBurstAndRefusesTheRestWithoutASignal(t *testing.T) {
	t.Parallel()
	const burst = 3
	cfg := testConfig(t)
	cfg.RateSender = fmt.Sprintf("%d@1h", burst)
	require.NoError(t, cfg.validate())
	s := startStack(t, cfg)
	s.startWorker(&testModel{})
	chat := uniqueChat("rl-burst")
	events := subscribe(t, s.baseURL, chat)

	for i := range burst {
		code, body := s.post(chat, fmt.Sprintf(`{"message_id":"b%d","sender_id":"rl-alice","text":"word%d"}`, i, i))
		require.Equal(t, http.StatusAccepted, code, body)
	}
	for i := range 2 {
		resp, err := http.Post(s.baseURL+"/api/chats/"+chat+"/messages", "application/json",
			strings.NewReader(fmt.Sprintf(`{"message_id":"over%d","sender_id":"rl-alice","text":"dropped%d"}`, i, i)))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusTooManyRequests, resp.StatusCode, "message %d past the burst", burst+i)
		retryAfter, err := strconv.Atoi(resp.Header.Get("Retry-After"))
		require.NoError(t, err)
		assert.Greater(t, retryAfter, 3000, "a token comes back in an hour")
	}
	elsewhere := "rl-never"
	code, body := s.post(elsewhere, `{"message_id":"n1","sender_id":"rl-alice","text":"a new chat"}`)
	require.Equal(t, http.StatusTooManyRequests, code, body)

	answered := 0
	seen := events.collectUntil(t, 30*time.Second, func(ev sseEvent) bool {
		if ev.Type == "message" {
			answered += strings.Count(ev.Text, "word")
		}
		return answered == burst
	})
	for _, ev := range seen {
		assert.NotContains(t, ev.Text, "dropped", "a refused message reaches no one")
	}
	snap := s.state(chat)
	assert.Equal(t, burst, snap.Counters.Inbound, "the session took the burst's messages only")
	assert.Equal(t, burst, snap.SeenMessages)
	assert.Equal(t, burst, s.inboundSignals(pipeline.SessionKey{Channel: "webchat", Chat: chat}), "no signal for a refused message")
	_, err := s.client.DescribeWorkflowExecution(context.Background(), pipeline.SessionKey{Channel: "webchat", Chat: elsewhere}.WorkflowID(), "")
	var notFound *serviceerror.NotFound
	assert.ErrorAs(t, err, &notFound, "a refused first message starts no session")
}

// inboundSignals counts the inbound signals in every run of a session.
func (s *stack) inboundSignals(key pipeline.SessionKey) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	runs, err := s.client.ListWorkflow(ctx, listRequest(fmt.Sprintf("WorkflowId = %q", key.WorkflowID())))
	require.NoError(s.t, err)
	require.NotEmpty(s.t, runs.Executions)
	n := 0
	for _, run := range runs.Executions {
		iter := s.client.GetWorkflowHistory(ctx, key.WorkflowID(), run.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for iter.HasNext() {
			ev, err := iter.Next()
			require.NoError(s.t, err)
			if a := ev.GetWorkflowExecutionSignaledEventAttributes(); a != nil && a.SignalName == workflows.SignalInbound {
				n++
			}
		}
	}
	return n
}
