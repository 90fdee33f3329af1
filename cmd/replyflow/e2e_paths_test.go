package main

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
	"github.com/replyflow/replyflow/adapters/telegram/telegramtest"
	"github.com/replyflow/replyflow/pipeline"
	"github.com/replyflow/replyflow/workflows"
	"github.com/replyflow/replyflow/workflows/session"
)

// More paths of the session workflow, each recorded for the replay test:
// model fallback and cooldowns, proposals rejected and expired, a
// continue-as-new that carries work, and a reaction clear retried.

func TestFallbackSkipsTheModelCoolingDown(t *testing.T) {
	t.Parallel()
	primary, fallback := modeltest.NewOpenAI(), modeltest.NewAnthropic()
	t.Cleanup(primary.Close)
	t.Cleanup(fallback.Close)
	cfg := testConfig(t)
	cfg.Model, cfg.ModelFallbacks = "openai/gpt-test", []string{"anthropic/claude-test"}
	s := startStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{
			MaxTokens:        256,
			OpenAIOptions:    []openaiopt.RequestOption{openaiopt.WithBaseURL(primary.URL + "/v1"), openaiopt.WithAPIKey("test")},
			AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithBaseURL(fallback.URL), anthropicopt.WithAPIKey("test")},
		}
	})
	chat := uniqueChat("fallback")
	events := subscribe(t, s.baseURL, chat)
	primary.Push(modeltest.Step{Status: 429, RetryAfter: "1", ErrorType: "rate_limit_exceeded", Message: "slow down"})

	code, _ := s.post(chat, `{"message_id":"f1","sender_id":"alice","text":"first question"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("f1"))
	assert.True(t, strings.HasPrefix(lastText(seen), "echo: "), "the fallback answered: %q", lastText(seen))
	assert.Contains(t, lastText(seen), "first question")
	snap := s.state(chat)
	assert.Equal(t, "anthropic/claude-test", snap.LastTurn.Model)
	assert.Equal(t, []string{"openai/gpt-test: " + pipeline.ErrRateLimited}, snap.LastTurn.Fallback)
	require.Len(t, snap.Cooldowns, 1)
	assert.Equal(t, "openai/gpt-test", snap.Cooldowns[0].Model)

	// The primary is still cooling down (30 s at least): it is not asked.
	code, _ = s.post(chat, `{"message_id":"f2","sender_id":"alice","text":"second question"}`)
	require.Equal(t, http.StatusAccepted, code)
	seen = events.collectUntil(t, 30*time.Second, isReplyTo("f2"))
	assert.Contains(t, lastText(seen), "second question")
	assert.Len(t, primary.Requests(), 1, "a model cooling down is skipped")
	assert.Len(t, fallback.Requests(), 2)
	assert.Empty(t, s.state(chat).LastTurn.Fallback)
	events.collectUntil(t, 30*time.Second, isClearOf("f2"))
	recordHistory(t, s.client, chat, "fallback_cooldown")
}

func lastText(events []sseEvent) string { return events[len(events)-1].Text }

// proposalOutcome runs one proposal in chat, decided by decide (which
// only posts), until the model's answer, and returns the events seen
// after the proposal message, the edits' texts, and the answer.
func proposalOutcome(t *testing.T, s *stack, chat string, decide func()) (seen []sseEvent, edits []string, answer string) {
	events := subscribe(t, s.baseURL, chat)
	code, _ := s.post(chat, `{"message_id":"ask","sender_id":"alice","text":"pay bob 5"}`)
	require.Equal(t, http.StatusAccepted, code)
	events.collectUntil(t, 30*time.Second, isButtonsMessage)
	decide()
	seen = events.collectUntil(t, 30*time.Second, isReplyTo("ask"))
	answer = lastText(seen)
	seen = append(seen, events.collectUntil(t, 30*time.Second, isClearOf("ask"))...)
	for _, ev := range seen {
		if ev.Type == "edit" {
			edits = append(edits, ev.Text)
		}
	}
	return seen, edits, answer
}

// replyTexts maps the messages replied to in events to the replies' texts.
func replyTexts(events []sseEvent) map[string]string {
	out := map[string]string{}
	for _, ev := range events {
		if ev.Type == "message" && ev.ReplyTo != "" {
			out[ev.ReplyTo] = ev.Text
		}
	}
	return out
}

func TestProposalRejectedByTextCommand(t *testing.T) {
	t.Parallel()
	tool, calls := payServer(t)
	s := startStack(t, proposalConfig(t, tool.URL))
	s.startWorker(payingModel{})
	chat := uniqueChat("reject-text")
	seen, edits, answer := proposalOutcome(t, s, chat, func() {
		code, _ := s.post(chat, `{"message_id":"no","sender_id":"alice","text":"/reject p1"}`)
		require.Equal(t, http.StatusAccepted, code)
		code, _ = s.post(chat, `{"message_id":"yes","sender_id":"boss","text":"/reject p1 too expensive"}`)
		require.Equal(t, http.StatusAccepted, code)
	})
	replies := replyTexts(seen)
	assert.Equal(t, "⚠️ webchat:alice is not allowed to decide proposal p1: only owners may", replies["no"])
	assert.Equal(t, "Proposal p1 rejected by webchat:boss.", replies["yes"])
	assert.Equal(t, []string{"🚫 Rejected by webchat:boss [p1]: pay (amount=5, to=bob)\nReason: too expensive"}, edits)
	assert.Equal(t, "done: The user rejected this call (webchat:boss): too expensive. It was not run.", answer)
	assert.Zero(t, calls.Load(), "a rejected tool never runs")
	recordHistory(t, s.client, chat, "proposal_rejected")
}

func TestProposalExpiresWithoutADecision(t *testing.T) {
	t.Parallel()
	tool, calls := payServer(t)
	cfg := proposalConfig(t, tool.URL)
	cfg.ProposalTTL = 2 * time.Second // below what the configuration allows, for the test's sake
	s := startStack(t, cfg)
	s.startWorker(payingModel{})
	chat := uniqueChat("expire")
	_, edits, answer := proposalOutcome(t, s, chat, func() {})
	assert.Equal(t, []string{"⌛ Expired without a decision [p1]: pay (amount=5, to=bob)"}, edits)
	assert.Equal(t, "done: Nobody approved this call in time (expired). It was not run.", answer)
	assert.Zero(t, calls.Load(), "an expired tool never runs")
	require.Len(t, s.state(chat).Proposals, 1)
	assert.Equal(t, workflows.ProposalExpired, s.state(chat).Proposals[0].Status)
	recordHistory(t, s.client, chat, "proposal_expired")
}

// TestContinueAsNewCarriesTheDebounceBuffer: a message arrives while a turn
// runs and waits in its debounce window; the run continues as new as soon
// as the turn is done (a low history limit), carrying the open window and
// the scheduled clear, and the next run answers the message.
func TestContinueAsNewCarriesTheDebounceBuffer(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t)
	cfg.Debounce = 4 * time.Second // far longer than the end of the running turn takes
	cfg.MaxHistoryEvents = 20      // more than a run takes to start, less than a turn
	s := startStack(t, cfg)
	release := make(chan struct{})
	model := holding("long task", release)
	s.startWorker(model)
	chat := uniqueChat("carry")
	events := subscribe(t, s.baseURL, chat)

	s.runTurnAndBufferOne(model, chat, "c1", "c2")
	close(release)

	seen := events.collectUntil(t, 30*time.Second, isReplyTo("c2"))
	seen = append(seen, events.collectUntil(t, 30*time.Second, isClearOf("c2"))...)
	var replies []string
	for _, ev := range seen {
		if ev.Type == "message" {
			replies = append(replies, ev.ReplyTo)
		}
	}
	assert.Equal(t, []string{"c1", "c2"}, replies, "one turn each, in order")

	carried := s.carriedStates(pipeline.SessionKey{Channel: "webchat", Chat: chat})
	require.NotEmpty(t, carried, "the session continued as new")
	assert.True(t, slices.ContainsFunc(carried, func(st session.State) bool {
		return len(st.Intake.Buffers) == 1 && st.Intake.Buffers[0].Messages[0].MessageID == "c2" &&
			slices.ContainsFunc(st.Reactions.Reactions, func(r session.Reaction) bool { return r.MessageID == "c1" && !r.ClearAt.IsZero() })
	}), "a run began with c2's debounce window open and c1's clear scheduled")
	recordHistory(t, s.client, chat, "continue_as_new_buffer")
}

// carriedStates are the states the session's runs began from after a
// continue-as-new, oldest first.
func (s *stack) carriedStates(key pipeline.SessionKey) []session.State {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	runs, err := s.client.ListWorkflow(ctx, listRequest(`WorkflowId = "`+key.WorkflowID()+`"`))
	require.NoError(s.t, err)
	var out []session.State
	for _, run := range slices.Backward(runs.Executions) {
		iter := s.client.GetWorkflowHistory(ctx, key.WorkflowID(), run.Execution.RunId, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		first, err := iter.Next()
		require.NoError(s.t, err)
		var p session.Params
		require.NoError(s.t, converter.GetDefaultDataConverter().FromPayloads(first.GetWorkflowExecutionStartedEventAttributes().GetInput(), &p))
		if p.State != nil {
			out = append(out, *p.State)
		}
	}
	return out
}

// TestTelegramFailedClearIsRetriedOnADurableTimer: Telegram fails the
// clear of a reaction; the session tries it again after its backoff (30 s,
// a workflow constant) and the reaction ends cleared.
func TestTelegramFailedClearIsRetriedOnADurableTimer(t *testing.T) {
	t.Parallel()
	s := startTelegramStack(t, testConfig(t))
	s.startWorker(&testModel{})
	chat := telegramtest.Private(uniqueTelegramID())
	fault := telegramtest.ServerError()
	fault.When = telegramtest.ClearsReaction
	s.fake.FailNext("setMessageReaction", 1, fault)

	asked := s.fake.AddMessage(telegramtest.Incoming{Chat: chat, From: tgAlice, Text: "hello"})
	waitFor(t, s.fake, "the answer", func() bool { return len(s.fake.Sent(chat.ID)) == 1 })
	waitFor(t, s.fake, "a clear refused", func() bool {
		for _, c := range s.fake.Calls("setMessageReaction") {
			if c.Status == http.StatusBadGateway {
				return true
			}
		}
		return false
	})
	require.Eventually(t, func() bool {
		r := s.stateOf(tgKey(chat)).Reactions
		return len(r) == 1 && !r[0].RetryAt.IsZero()
	}, 30*time.Second, 50*time.Millisecond, "the clear waits on its retry timer")
	assert.Equal(t, 1, s.stateOf(tgKey(chat)).Reactions[0].Attempts)

	waitFor(t, s.fake, "the reaction cleared on the retry", cleared(s.fake, chat, asked))
	assert.Equal(t, []string{"👀", "👌", ""}, emojiOn(s.fake, chat, asked), "the refused clear left no trace")
	require.Eventually(t, func() bool { return len(s.stateOf(tgKey(chat)).Reactions) == 0 }, 30*time.Second, 50*time.Millisecond)
	assert.Equal(t, []string{"You said: hello"}, sentTexts(s.fake, chat))
	recordHistoryOf(t, s.client, tgKey(chat), "reaction_clear_retry")
}
