package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
	"github.com/replyflow/replyflow/workflows/session"
)

// payOnAsk asks to call "pay" for a message that says "pay" (until the
// call's result is in the prompt) and echoes every other message.
type payOnAsk struct{}

func (payOnAsk) Name() string { return "test/pay-on-ask" }

func (payOnAsk) Complete(_ context.Context, p models.Prompt) (models.Completion, error) {
	for _, m := range p.Messages {
		if m.Role == "tool" {
			return models.Completion{Text: "done: " + m.Text}, nil
		}
	}
	last := lastUserText(p)
	if strings.Contains(last, "pay bob") {
		return models.Completion{ToolCalls: []pipeline.ToolCall{{ID: "call-1", Name: "pay", Arguments: `{"amount":5,"to":"bob"}`}}}, nil
	}
	return models.Completion{Text: "echo " + last}, nil
}

// chatUntilContinued posts messages into chat, one at a time, until the
// session has continued as new (its history passed the low bound the test
// set), and returns their IDs.
func (s *stack) chatUntilContinued(chat, prefix string) []string {
	s.t.Helper()
	key := pipeline.SessionKey{Channel: "webchat", Chat: chat}
	var ids []string
	deadline := time.Now().Add(60 * time.Second)
	for len(s.carriedStates(key)) == 0 {
		require.True(s.t, time.Now().Before(deadline), "the session never continued as new while %d messages queued", len(ids))
		require.Less(s.t, len(ids), 40, "the session never continued as new")
		id := fmt.Sprintf("%s%d", prefix, len(ids)+1)
		code, _ := s.post(chat, fmt.Sprintf(`{"message_id":%q,"sender_id":"alice","text":"meanwhile %d"}`, id, len(ids)+1))
		require.Equal(s.t, http.StatusAccepted, code)
		ids = append(ids, id)
		require.Eventually(s.t, func() bool { return s.state(chat).SeenMessages >= len(ids)+1 }, 30*time.Second, 50*time.Millisecond)
	}
	return ids
}

// A turn that waits for a decision does not hold a busy chat's history
// open: the run continues as new with the turn waiting, the decision
// taken in the next run runs the tool once, and every queued message is
// answered once after the answer.
func TestAWaitingProposalIsCarriedByContinueAsNew(t *testing.T) {
	t.Parallel()
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.MaxHistoryEvents = 40 // past a turn that proposes, well before a busy chat's end
	cfg.Debounce = 0          // one turn for each queued message
	cfg.RateSender = "off"    // the chatter is faster than a person on purpose
	s := startStack(t, cfg)
	s.startWorker(payOnAsk{})
	chat := uniqueChat("carried-proposal")
	events := subscribe(t, s.baseURL, chat)

	code, _ := s.post(chat, `{"message_id":"pay1","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen := events.collectUntil(t, 30*time.Second, isButtonsMessage)
	proposalMsg := seen[len(seen)-1].MessageID
	events.collectUntil(t, 30*time.Second, isReaction("pay1", "⏳"))

	queued := s.chatUntilContinued(chat, "q")
	carried := s.carriedStates(pipeline.SessionKey{Channel: "webchat", Chat: chat})
	require.True(t, slices.ContainsFunc(carried, func(st session.State) bool {
		return st.Turn.Active != nil && st.Turn.Active.Phase == session.PhaseWaiting
	}), "a run began with the turn waiting for its decision")
	assert.Equal(t, int32(0), calls.Load(), "nothing ran before the decision")

	require.Equal(t, http.StatusAccepted, s.press(chat, "boss", proposalMsg, "approve:p1"))
	last := queued[len(queued)-1]
	seen = events.collectUntil(t, 60*time.Second, isClearOf(last))
	assert.Equal(t, int32(1), calls.Load(), "approved in the next run: the tool ran once")
	replies := map[string]int{}
	for _, ev := range seen {
		if ev.Type == "message" {
			replies[ev.ReplyTo]++
		}
	}
	assert.Equal(t, 1, replies["pay1"], "the answer to pay1, once")
	for _, id := range queued {
		assert.Equal(t, 1, replies[id], "%s answered once", id)
	}
	recordHistory(t, s.client, chat, "proposal_carried")
}

// A parked delivery does not hold a busy chat's history open either: the
// run continues as new with the turn parked, and `replyflow retry` in the
// next run delivers it once, before the queued messages' answers.
func TestAParkedDeliveryIsCarriedByContinueAsNew(t *testing.T) {
	t.Setenv("TEMPORAL_ADDRESS", temporalServer.FrontendHostPort()) // for retryCommand
	cfg := testConfig(t)
	cfg.DeliveryTimeout, cfg.DeliveryDeadline = time.Second, 3*time.Second
	cfg.MaxHistoryEvents = 60 // past a parked turn's events, well before a busy chat's end
	cfg.Debounce = 0          // one turn for each queued message
	cfg.RateSender = "off"    // the chatter is faster than a person on purpose
	s := startStack(t, cfg)
	release := make(chan struct{})
	model := holding("park me", release)
	s.startWorker(model)
	chat := uniqueChat("carried-park")

	code, _ := s.post(chat, `{"message_id":"p1","sender_id":"alice","text":"park me"}`)
	require.Equal(t, http.StatusAccepted, code)
	model.waitStarted(t, "park me")
	s.stopGateway()
	close(release)
	require.Eventually(t, func() bool { return s.state(chat).Status == workflows.StatusDeliveryFailed }, 30*time.Second, 100*time.Millisecond,
		"the turn parks once the deadline passed")
	s.restartGateway()
	events := subscribe(t, s.baseURL, chat)

	queued := s.chatUntilContinued(chat, "q")
	carried := s.carriedStates(pipeline.SessionKey{Channel: "webchat", Chat: chat})
	require.True(t, slices.ContainsFunc(carried, func(st session.State) bool {
		return st.Turn.Active != nil && st.Turn.Active.Phase == session.PhaseParked
	}), "a run began with the turn parked")

	var out strings.Builder
	require.NoError(t, retryCommand(context.Background(), s.cfg, []string{"--reason", "gateway is back", "webchat:" + chat}, &out, s.logger))
	last := queued[len(queued)-1]
	seen := events.collectUntil(t, 60*time.Second, isClearOf(last))
	var order []string
	for _, ev := range seen {
		if ev.Type == "message" {
			order = append(order, ev.ReplyTo)
		}
	}
	assert.Equal(t, append([]string{"p1"}, queued...), order, "the parked reply once, then each queued message's answer once, in order")
	recordHistory(t, s.client, chat, "parked_carried")
}
