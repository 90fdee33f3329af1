package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/replyflow/replyflow/activities/store"
)

// `budget list` shows who is over budget, the breakers in force and the
// trips; `budget raise` adds to a chat's budget for the day.
func TestBudgetVerbsListAndRaise(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(t)
	cfg.BudgetChatTokens = 1000
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	db, err := store.Open(ctx, cfg.StoreDSN)
	require.NoError(t, err)
	day, _ := cfg.spend(db).BudgetDay(now)
	chat := store.BudgetKey{Day: day, Scope: store.ScopeChat, Subject: "session:webchat:room"}
	quiet := store.BudgetKey{Day: day, Scope: store.ScopeChat, Subject: "session:webchat:quiet"}
	require.NoError(t, db.AddSpend(ctx, []store.BudgetKey{chat}, 1200, 0, now))
	require.NoError(t, db.AddSpend(ctx, []store.BudgetKey{quiet}, 10, 0, now))
	_, err = db.Refused(ctx, day, "session:webchat:room", "t9", now)
	require.NoError(t, err)
	require.NoError(t, db.RecordTrip(ctx, store.Trip{SessionID: "session:webchat:room", TurnID: "t3", Kind: "repeat", Detail: "search called 4 times", At: now.Add(-time.Hour)}))
	_, err = db.UpdateGuard(ctx, "session:webchat:hb", now, func(g *store.Guard) bool { g.HeartbeatUntil = now.Add(time.Hour); return true })
	require.NoError(t, err)
	require.NoError(t, db.Close())

	var out bytes.Buffer
	require.NoError(t, budgetCommand(ctx, cfg, []string{"list"}, &out, now))
	text := out.String()
	assert.Contains(t, text, "Budget-day 2026-11-27 (resets 2026-11-28 00:00 UTC)")
	assert.Regexp(t, `chat\s+session:webchat:room\s+1200\s+1000\s+0\.0000\s+off\s+0\s+over budget`, text)
	assert.Regexp(t, `session\s+session:webchat:room\s+0\s+off\s+.*1\s+refused turns`, text)
	assert.NotContains(t, text, "session:webchat:quiet", "within its budget: listed only with --all")
	assert.Regexp(t, `session:webchat:hb\s+heartbeat backs off`, text)
	assert.Regexp(t, `session:webchat:room\s+repeat\s+search called 4 times`, text)

	out.Reset()
	require.NoError(t, budgetCommand(ctx, cfg, []string{"raise", "webchat:room", "--tokens", "500"}, &out, now))
	assert.Contains(t, out.String(), "Raised the chat budget of session:webchat:room for 2026-11-27 by 500 tokens")
	out.Reset()
	require.NoError(t, budgetCommand(ctx, cfg, []string{"list", "--all"}, &out, now))
	assert.Regexp(t, `chat\s+session:webchat:room\s+1200\s+1000 \+500\s`, out.String())
	assert.Contains(t, out.String(), "session:webchat:quiet")

	db, err = store.Open(ctx, cfg.StoreDSN)
	require.NoError(t, err)
	_, err = db.RaiseBudgetOnce(ctx, chat, "session:webchat:room#c.7", 300, 0, now)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	out.Reset()
	require.NoError(t, budgetCommand(ctx, cfg, []string{"list", "--all"}, &out, now))
	assert.Regexp(t, `chat\s+session:webchat:room\s+1200\s+1000 \+800\s`, out.String(), "an owner's /budget raise in the chat adds to its row")
	assert.Regexp(t, `raise\s+session:webchat:room#c\.7\s+0\s+\+300\s+0\.0000\s+\+0\.00\s+0\s+/budget raise in the chat`, out.String(), "and is listed with --all")

	assert.Error(t, budgetCommand(ctx, cfg, []string{"raise", "webchat:room"}, &out, now), "something to add")
	assert.Error(t, budgetCommand(ctx, cfg, []string{"raise", "--sender", "42", "--tokens", "5"}, &out, now), "a sender names its channel")
	require.NoError(t, budgetCommand(ctx, cfg, []string{"raise", "--deployment", "--usd", "2.5"}, &out, now))
	assert.Contains(t, out.String(), "Raised the deployment budget of "+cfg.TaskQueue)
}

func TestSpendSettingsAreValidatedAndWired(t *testing.T) {
	cfg := testConfig(t)
	spend := cfg.spend(nil)
	assert.Equal(t, int64(1000000), spend.Budgets.ChatTokens, "the defaults: a chat and a sender capped, money off")
	assert.Equal(t, int64(500000), spend.Budgets.SenderTokens)
	assert.Zero(t, spend.Budgets.DeploymentTokens)
	assert.Zero(t, spend.Budgets.ChatUSD)
	assert.Equal(t, cfg.TaskQueue, spend.Deployment)
	assert.Equal(t, "UTC", spend.Location.String(), "REPLYFLOW_TIMEZONE when REPLYFLOW_BUDGET_TIMEZONE is empty")

	cfg.Timezone, cfg.BudgetResetHour = "Europe/Berlin", 6
	cfg.ModelPrices = []string{"openai/gpt-4o-mini=0.15:0.60"}
	require.NoError(t, cfg.validate())
	spend = cfg.spend(nil)
	assert.Equal(t, "Europe/Berlin", spend.Location.String())
	assert.Equal(t, 6, spend.ResetHour)
	assert.InDelta(t, 0.60, spend.Prices["openai/gpt-4o-mini"].OutputPerMillion, 1e-12)

	cfg.BudgetChatTokens, cfg.BudgetResetHour, cfg.BudgetTimezone = -1, 24, "Mars/Olympus"
	cfg.ModelPrices = []string{"gpt-4o-mini=cheap"}
	cfg.BreakerHeartbeatBackoffMax = time.Minute
	err := cfg.validate()
	require.Error(t, err)
	for _, name := range []string{"REPLYFLOW_BUDGET_CHAT_TOKENS", "REPLYFLOW_BUDGET_RESET_HOUR", "REPLYFLOW_BUDGET_TIMEZONE", "REPLYFLOW_MODEL_PRICES", "REPLYFLOW_BREAKER_HEARTBEAT_BACKOFF_MAX"} {
		assert.Contains(t, err.Error(), name)
	}
}
