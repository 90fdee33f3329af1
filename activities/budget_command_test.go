package activities

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// say is a turn of one message from sender: what the session asks of
// AgentTurn for a message it does not take as a command of its own.
func (f *spendFixture) say(t *testing.T, turnID, sender, text string) pipeline.TurnResult {
	t.Helper()
	return f.step(t, pipeline.TurnRequest{Session: session, TurnID: turnID, Model: "test/metered", Text: text,
		Messages: []pipeline.TurnMessage{{MessageID: turnID, SenderID: sender, Text: text, At: f.clock.Now()}}})
}

// chatUsage is what the store holds of the chat's budget today.
func (f *spendFixture) chatUsage(t *testing.T) store.BudgetUsage {
	t.Helper()
	day, _ := f.acts.Spend.BudgetDay(f.clock.Now())
	key := store.BudgetKey{Day: day, Scope: store.ScopeChat, Subject: session.WorkflowID()}
	got, err := f.db.BudgetUsage(context.Background(), []store.BudgetKey{key})
	require.NoError(t, err)
	return got[key]
}

// transcriptLength is how many messages the session's transcript holds.
func (f *spendFixture) transcriptLength(t *testing.T) int {
	t.Helper()
	entry, err := f.db.SessionEntry(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	msgs, err := f.db.Recent(context.Background(), entry.TranscriptID, 100)
	require.NoError(t, err)
	return len(msgs)
}

// /budget shows this chat's, this sender's and the deployment's budgets
// for today, what is left and when the day resets, without the model: it
// counts nothing, writes nothing to the transcript, and leaves the day's
// one notice to the next refused turn.
func TestBudgetShowsWhatIsLeftWithoutTheModel(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 250, SenderTokens: 1000, ChatUSD: 1},
		Prices: map[string]Price{"test/metered": {InputPerMillion: 5, OutputPerMillion: 15}}})
	f.turn(t, "alice")
	f.turn(t, "alice")
	kept := f.transcriptLength(t)

	got := f.say(t, "show-1", "alice", "/budget").Reply
	assert.Contains(t, got, "This chat: 200 of 250 tokens spent, 50 left; $0.0018 of $1.00 spent, $0.9982 left.")
	assert.Contains(t, got, "You, in all chats: 200 of 1,000 tokens spent, 800 left.")
	assert.Contains(t, got, "The whole agent: no daily limit.")
	assert.Contains(t, got, "The budget-day resets at 06:00 CET, Nov 28.", "in the budgets' time zone")
	assert.Contains(t, got, "/budget raise 50k")
	assert.EqualValues(t, 2, f.model.calls.Load(), "no model call for /budget")
	assert.EqualValues(t, 200, f.chatUsage(t).Tokens, "the answer counts nothing")
	assert.Equal(t, kept, f.transcriptLength(t), "nor is it written to the transcript")

	f.turn(t, "alice") // 300 of 250: spent
	got = f.say(t, "show-2", "bob", "/BUDGET@replyflow_bot").Reply
	assert.Contains(t, got, "This chat: 300 of 250 tokens spent, none left;")
	assert.Contains(t, got, "You, in all chats: 0 of 1,000 tokens spent, 1,000 left.", "bob's own budget")
	assert.Contains(t, f.turn(t, "alice").Reply, "This chat's daily budget is spent", "/budget did not take the day's notice")
	assert.EqualValues(t, 3, f.model.calls.Load())

	batch := pipeline.TurnRequest{Session: session, TurnID: "batch", Model: "test/metered", Messages: []pipeline.TurnMessage{
		{MessageID: "m1", SenderID: "alice", Text: "/budget"}, {MessageID: "m2", SenderID: "alice", Text: "and this"}}}
	assert.Equal(t, pipeline.SilentToken, f.step(t, batch).Reply, "/budget in a batch of more is no command: the spent budget refuses it")
}

// An owner raises today's chat budget with /budget raise: the chat talks
// again, the answer says what is left, a retried attempt of the same turn
// adds nothing more, and the raise is logged without the message's text.
// An owner who claimed the agent may raise too.
func TestAnOwnerRaisesTheChatBudget(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 250, ChatUSD: 1}})
	var logs bytes.Buffer
	f.acts.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	f.acts.Settings.Owners = []string{"webchat:boss"}
	for range 3 {
		f.turn(t, "alice")
	}
	assert.Contains(t, f.turn(t, "alice").Reply, "budget is spent")
	require.EqualValues(t, 3, f.model.calls.Load())

	got := f.say(t, "raise-1", "boss", "/budget raise 100k").Reply
	assert.Contains(t, got, "Raised this chat's budget for today by 100,000 tokens.")
	assert.Contains(t, got, "This chat: 300 of 100,250 tokens spent (250 + 100,000 raised by an owner), 99,950 left;")
	again := f.say(t, "raise-1", "boss", "/budget raise 100k").Reply
	assert.Equal(t, got, again, "a retried attempt answers the same")
	assert.EqualValues(t, 100_000, f.chatUsage(t).RaisedTokens, "and adds nothing more")
	assert.EqualValues(t, 3, f.model.calls.Load(), "no model call for /budget raise")
	assert.EqualValues(t, 300, f.chatUsage(t).Tokens, "the answer counts nothing")

	assert.Equal(t, "hello", f.turn(t, "alice").Reply, "raised: the model answers again")
	assert.EqualValues(t, 4, f.model.calls.Load())

	line := logs.String()
	assert.Contains(t, line, `msg="Chat budget raised by an owner"`)
	assert.Contains(t, line, "session=session:webchat:room scope=chat")
	assert.Contains(t, line, "tokens=100000")
	assert.Contains(t, line, "who=webchat:boss")
	assert.NotContains(t, line, "100k", "never the message's text")
	assert.Equal(t, 1, bytes.Count(logs.Bytes(), []byte("Chat budget raised")), "the retried attempt raised nothing")

	ctx := context.Background()
	code, err := f.db.NewClaimCode(ctx, time.Hour)
	require.NoError(t, err)
	claimed, err := f.db.Claim(ctx, code, "webchat:carol")
	require.NoError(t, err)
	require.True(t, claimed)
	assert.Contains(t, f.say(t, "raise-2", "carol", "/budget raise $2").Reply, "Raised this chat's budget for today by $2.00.", "a claimed owner")
	assert.InDelta(t, 2.0, f.chatUsage(t).RaisedUSD, 1e-9)
}

// A sender who is not an owner cannot raise the budget: the answer says
// so, nothing is added, and the model is not asked.
func TestANonOwnerCannotRaiseTheBudget(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 250}})
	f.acts.Settings.Owners = []string{"webchat:boss", "telegram:alice"}
	got := f.say(t, "r1", "alice", "/budget raise 50000").Reply
	assert.Equal(t, "⚠️ Only owners may raise this chat's budget. /budget shows what is left today.", got, "alice owns on telegram, not here")
	assert.Zero(t, f.chatUsage(t).RaisedTokens)
	assert.Zero(t, f.model.calls.Load())
}

// With no budget set, /budget says so, to anyone, and raises nothing.
func TestBudgetWithBudgetsOff(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Breakers: Breakers{MaxSteps: 20}})
	f.acts.Settings.Owners = []string{"webchat:boss"}
	const off = "No budget is set here: the model's use is not limited per day."
	assert.Equal(t, off, f.say(t, "b1", "alice", "/budget").Reply)
	assert.Equal(t, off, f.say(t, "b2", "boss", "/budget raise 5k").Reply)
	assert.Zero(t, f.chatUsage(t).RaisedTokens)
	f.acts.Spend = nil
	assert.Equal(t, off, f.say(t, "b3", "alice", "/budget").Reply, "a worker without budgets")
	assert.Zero(t, f.model.calls.Load())

	g := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{SenderTokens: 1000}})
	g.acts.Settings.Owners = []string{"webchat:boss"}
	assert.Equal(t, "This chat has no daily token budget, so there is nothing to raise. /budget shows the budgets that are set.",
		g.say(t, "b4", "boss", "/budget raise 5k").Reply)
	assert.Contains(t, g.say(t, "b5", "boss", "/budget raise $1").Reply, "This chat has no daily money budget")
	assert.Contains(t, g.say(t, "b6", "boss", "/budget").Reply, "This chat: no daily limit.")
	assert.Zero(t, g.model.calls.Load())
}

// A /budget the command does not understand gets a clear usage line, not
// a model call.
func TestAMalformedBudgetCommandGetsItsUsage(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 250}})
	f.acts.Settings.Owners = []string{"webchat:boss"}
	for i, text := range []string{"/budget raise", "/budget raise lots", "/budget raise -5", "/budget raise 0", "/budget raise 1.5",
		"/budget raise $0", "/budget raise $-1", "/budget raise 1e6", "/budget raise 5k now", "/budget show", "/budget raise 2000000m"} {
		got := f.say(t, fmt.Sprintf("bad-%d", i), "boss", text).Reply
		assert.Contains(t, got, "⚠️ ", text)
		assert.Contains(t, got, budgetUsageLine, text)
	}
	assert.Contains(t, f.say(t, "bad-amount", "boss", "/budget raise lots").Reply, "lots is not an amount: give tokens (50000 or 50k) or US dollars ($2).")
	assert.Zero(t, f.chatUsage(t).RaisedTokens)
	assert.Zero(t, f.model.calls.Load())
}

func TestParseBudgetCommand(t *testing.T) {
	for text, want := range map[string]budgetAsk{
		"/budget":                  {},
		"  /Budget@my_bot \n":      {},
		"/budget raise 50000":      {raise: true, tokens: 50_000},
		"/budget raise 50,000":     {raise: true, tokens: 50_000},
		"/budget RAISE 50K":        {raise: true, tokens: 50_000},
		"/budget raise 1.1k":       {raise: true, tokens: 1_100},
		"/budget raise 1.5m":       {raise: true, tokens: 1_500_000},
		"/budget raise $2":         {raise: true, usd: 2},
		"/budget raise $0.50":      {raise: true, usd: 0.5},
		"/budget raise 1000000000": {raise: true, tokens: 1_000_000_000},
	} {
		got, ok := parseBudgetCommand(text)
		assert.True(t, ok, text)
		assert.Equal(t, want, got, text)
	}
	for _, text := range []string{"", "budget", "/budgets", "please /budget", "/status", "/budget-raise 5"} {
		_, ok := parseBudgetCommand(text)
		assert.False(t, ok, "%q is no /budget", text)
	}
	assert.Equal(t, "1,000,000,000,000", tokenCount(maxRaiseTokens))
	assert.Equal(t, "999", tokenCount(999))
	assert.Equal(t, "$0.0018", dollars(0.0018))
	assert.Equal(t, "$2.00", dollars(2))
}
