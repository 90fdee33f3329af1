package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	anthropicopt "github.com/anthropics/anthropic-sdk-go/option"
	openaiopt "github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/models/modeltest"
)

// A chat's spent budget, end to end: the provider reports usage and cost
// through its real client; once the chat's tokens are spent the next
// message gets one notice, the ones after it no answer and no model call,
// each still acknowledged and cleared; `replyflow budget list` shows the
// chat over budget, and a raise lets it talk again.
func TestASpentBudgetEndToEnd(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	cfg := testConfig(t)
	cfg.Model = "openai/gpt-test"
	cfg.Stream = "off"
	cfg.BudgetChatTokens = 250
	s := startStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256,
			OpenAIOptions:    []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")},
			AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithAPIKey("test")},
		}
	})
	cost := 0.001
	for range 3 {
		oa.Push(modeltest.Step{Text: "fine", InputTokens: 60, OutputTokens: 40, Cost: &cost})
	}
	chat := uniqueChat("budget-e2e")
	events := subscribe(t, s.baseURL, chat)
	for _, id := range []string{"b1", "b2", "b3"} {
		assert.Equal(t, "fine", s.command(events, chat, id, "alice", "question "+id))
	}
	require.Len(t, oa.Requests(), 3, "300 tokens counted: the budget of 250 is spent")

	notice := s.command(events, chat, "b4", "alice", "one more")
	assert.Contains(t, notice, "This chat's daily budget is spent")
	assert.Contains(t, notice, "an owner can raise the budget")
	for _, id := range []string{"b5", "b6"} {
		code, body := s.post(chat, `{"message_id":"`+id+`","sender_id":"alice","text":"hello?"}`)
		require.Equal(t, http.StatusAccepted, code, body)
		// A silent turn sends nothing: the session's record says it ended.
		require.Eventually(t, func() bool {
			last := s.state(chat).LastTurn
			return last != nil && len(last.MessageIDs) == 1 && last.MessageIDs[0] == id && !last.FinishedAt.IsZero()
		}, 30*time.Second, 50*time.Millisecond, "the turn of %s ends", id)
		assert.Equal(t, "silent", s.state(chat).LastTurn.Outcome, "silence after the one notice")
	}
	assert.Len(t, oa.Requests(), 3, "no model call once the budget is spent")

	// The session is found in one query, and its state says why.
	held := s.state(chat).Held
	require.NotNil(t, held, "the state says the session is held")
	assert.Equal(t, "budget:chat", held.Reason)
	assert.True(t, held.Until.After(time.Now()), "until the budget-day ends: %s", held.Until)
	overBudget := func() string {
		var out bytes.Buffer
		require.NoError(t, listSessions(context.Background(), s.client, sessionsOptions{held: true, limit: 100}, &out))
		return out.String()
	}
	require.Eventually(t, func() bool { return strings.Contains(overBudget(), "session:webchat:"+chat) }, 30*time.Second, 100*time.Millisecond,
		"replyflow sessions --over-budget lists it")
	assert.Regexp(t, `session:webchat:`+chat+`\s+\S+\s+\S+\s+.*budget:chat for `, overBudget())

	var out bytes.Buffer
	require.NoError(t, budgetCommand(context.Background(), s.cfg, []string{"list"}, &out, time.Now()))
	assert.Regexp(t, `chat\s+session:webchat:`+chat+`\s+300\s+250\s+0\.0030\s+off\s+0\s+over budget`, out.String(), "the provider's cost is counted too")
	assert.Regexp(t, `session\s+session:webchat:`+chat+`\s+0\s+off\s+0\.0000\s+off\s+3\s+refused turns`, out.String())

	out.Reset()
	require.NoError(t, budgetCommand(context.Background(), s.cfg, []string{"raise", "webchat:" + chat, "--tokens", "100"}, &out, time.Now()))
	oa.Push(modeltest.Step{Text: "back", InputTokens: 60, OutputTokens: 40})
	code, body := s.post(chat, `{"message_id":"b7","sender_id":"alice","text":"still there?"}`)
	require.Equal(t, http.StatusAccepted, code, body)
	seen := events.collectUntil(t, 30*time.Second, isReplyTo("b7"))
	assert.Equal(t, "back", lastText(seen), "raised: the model answers again")
	assert.Equal(t, 1, countMessages(seen), "nothing was sent for the silent turns before it")
	assert.Len(t, oa.Requests(), 4)
	assert.Nil(t, s.state(chat).Held, "a step let through ends the hold")
	require.Eventually(t, func() bool { return !strings.Contains(overBudget(), "session:webchat:"+chat) }, 30*time.Second, 100*time.Millisecond,
		"no longer listed once it talks again")
	recordHistory(t, s.client, chat, "budget_held")
}

// An owner raises a spent chat budget from the chat, end to end: /budget
// shows what is left, a member's /budget raise is refused, the owner's
// raises today's chat budget, and the next message is answered by the
// model again. The /budget turns never reach the model.
func TestAnOwnerRaisesTheBudgetFromTheChat(t *testing.T) {
	t.Parallel()
	oa := modeltest.NewOpenAI()
	t.Cleanup(oa.Close)
	cfg := testConfig(t)
	cfg.Model = "openai/gpt-test"
	cfg.Stream = "off"
	cfg.BudgetChatTokens = 250
	cfg.Owners = []string{"webchat:boss"}
	s := startStack(t, cfg)
	s.startWorkerWith(func(acts *activities.Activities) {
		acts.Models = &models.Registry{MaxTokens: 256,
			OpenAIOptions:    []openaiopt.RequestOption{openaiopt.WithBaseURL(oa.URL + "/v1"), openaiopt.WithAPIKey("test")},
			AnthropicOptions: []anthropicopt.RequestOption{anthropicopt.WithAPIKey("test")},
		}
	})
	for range 3 {
		oa.Push(modeltest.Step{Text: "fine", InputTokens: 60, OutputTokens: 40})
	}
	chat := uniqueChat("budget-raise-e2e")
	events := subscribe(t, s.baseURL, chat)
	for _, id := range []string{"r1", "r2", "r3"} {
		assert.Equal(t, "fine", s.command(events, chat, id, "alice", "question "+id))
	}
	assert.Contains(t, s.command(events, chat, "r4", "alice", "one more"), "This chat's daily budget is spent")
	require.Len(t, oa.Requests(), 3)

	shown := s.command(events, chat, "r5", "alice", "/budget")
	assert.Contains(t, shown, "This chat: 300 of 250 tokens spent, none left.")
	assert.Contains(t, shown, "You, in all chats: 300 of 500,000 tokens spent, 499,700 left.", "the default sender budget")
	assert.Contains(t, shown, "The budget-day resets at 00:00 UTC")
	assert.Equal(t, "⚠️ Only owners may raise this chat's budget. /budget shows what is left today.",
		s.command(events, chat, "r6", "alice", "/budget raise 100k"))
	raised := s.command(events, chat, "r7", "boss", "/budget raise 100k")
	assert.Contains(t, raised, "Raised this chat's budget for today by 100,000 tokens.")
	assert.Contains(t, raised, "This chat: 300 of 100,250 tokens spent (250 + 100,000 raised by an owner), 99,950 left.")
	assert.Len(t, oa.Requests(), 3, "no model request for the /budget turns")
	assert.Contains(t, s.command(events, chat, "r8", "alice", "/usage"), "What is left of today's budgets: /budget")

	oa.Push(modeltest.Step{Text: "back", InputTokens: 60, OutputTokens: 40})
	assert.Equal(t, "back", s.command(events, chat, "r9", "alice", "still there?"), "raised: the model answers again")
	require.Len(t, oa.Requests(), 4)

	var out bytes.Buffer
	require.NoError(t, budgetCommand(context.Background(), s.cfg, []string{"list", "--all"}, &out, time.Now()))
	assert.Regexp(t, `chat\s+session:webchat:`+chat+`\s+400\s+250 \+100000\s`, out.String(), "the same row `replyflow budget raise` adds to")
}
