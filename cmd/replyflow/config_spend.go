package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replyflow/replyflow/activities"
	"github.com/replyflow/replyflow/pipeline"
)

// validateSpend checks the budgets, the prices and the breakers, each
// error naming its variable.
func (c Config) validateSpend() []error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	tokens := map[string]int64{"BUDGET_CHAT_TOKENS": c.BudgetChatTokens, "BUDGET_SENDER_TOKENS": c.BudgetSenderTokens, "BUDGET_DEPLOYMENT_TOKENS": c.BudgetDeploymentTokens}
	for _, name := range sortedKeys(tokens) {
		v := tokens[name]
		check(v >= 0, "REPLYFLOW_%s must not be negative (0 is no limit), got %d", name, v)
	}
	usd := map[string]float64{"BUDGET_CHAT_USD": c.BudgetChatUSD, "BUDGET_SENDER_USD": c.BudgetSenderUSD, "BUDGET_DEPLOYMENT_USD": c.BudgetDeploymentUSD}
	for _, name := range sortedKeys(usd) {
		v := usd[name]
		check(v >= 0, "REPLYFLOW_%s must not be negative (0 is no limit), got %g", name, v)
	}
	check(c.BudgetResetHour >= 0 && c.BudgetResetHour <= 23, "REPLYFLOW_BUDGET_RESET_HOUR must be from 0 to 23, got %d", c.BudgetResetHour)
	if c.BudgetTimezone != "" {
		if _, err := time.LoadLocation(c.BudgetTimezone); err != nil {
			errs = append(errs, fmt.Errorf("REPLYFLOW_BUDGET_TIMEZONE: %w", err))
		}
	}
	// A budget-day's rows must outlive the day, and `replyflow budget
	// list` reads yesterday's too.
	check(c.BudgetRetention >= 48*time.Hour, "REPLYFLOW_BUDGET_RETENTION must be at least 48h, got %s", c.BudgetRetention)
	if _, err := parsePrices(c.ModelPrices); err != nil {
		errs = append(errs, fmt.Errorf("REPLYFLOW_MODEL_PRICES: %w", err))
	}
	breakers := map[string]int{"BREAKER_REPEAT_CALLS": c.BreakerRepeatCalls, "BREAKER_MAX_STEPS": c.BreakerMaxSteps, "BREAKER_HEARTBEAT_SAME": c.BreakerHeartbeatSame, "BREAKER_FAILURES": c.BreakerFailures}
	for _, name := range sortedKeys(breakers) {
		v := breakers[name]
		check(v >= 0, "REPLYFLOW_%s must not be negative (0 turns the breaker off), got %d", name, v)
	}
	check(c.BreakerHeartbeatSame == 0 || c.BreakerHeartbeatBackoff >= time.Minute, "REPLYFLOW_BREAKER_HEARTBEAT_BACKOFF must be at least 1m, got %s", c.BreakerHeartbeatBackoff)
	check(c.BreakerHeartbeatBackoffMax >= c.BreakerHeartbeatBackoff, "REPLYFLOW_BREAKER_HEARTBEAT_BACKOFF_MAX must be at least REPLYFLOW_BREAKER_HEARTBEAT_BACKOFF, got %s", c.BreakerHeartbeatBackoffMax)
	check(c.BreakerFailures == 0 || c.BreakerCooloff >= time.Minute, "REPLYFLOW_BREAKER_COOLOFF must be at least 1m, got %s", c.BreakerCooloff)
	return errs
}

// parsePrices reads "provider/model=input:output" entries, US dollars per
// million tokens.
func parsePrices(entries []string) (map[string]activities.Price, error) {
	out := map[string]activities.Price{}
	for _, e := range entries {
		model, prices, ok := strings.Cut(strings.TrimSpace(e), "=")
		in, outPrice, ok2 := strings.Cut(prices, ":")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%q is not provider/model=input:output (US dollars per million tokens, e.g. openai/gpt-4o-mini=0.15:0.60)", e)
		}
		if _, _, err := pipeline.ParseModelName(model); err != nil {
			return nil, err
		}
		i, err1 := strconv.ParseFloat(in, 64)
		o, err2 := strconv.ParseFloat(outPrice, 64)
		if err1 != nil || err2 != nil || i < 0 || o < 0 {
			return nil, fmt.Errorf("%q: the prices must be numbers, not negative (US dollars per million tokens)", e)
		}
		out[model] = activities.Price{InputPerMillion: i, OutputPerMillion: o}
	}
	return out, nil
}

// budgetLocation is the budgets' time zone: REPLYFLOW_BUDGET_TIMEZONE,
// else REPLYFLOW_TIMEZONE.
func (c Config) budgetLocation() *time.Location {
	if c.BudgetTimezone != "" {
		return location(c.BudgetTimezone)
	}
	return location(c.Timezone)
}

// spend is the worker's budgets and breakers, counting in st.
func (c Config) spend(st activities.SpendStore) *activities.Spend {
	prices, _ := parsePrices(c.ModelPrices) // validate checked them
	return &activities.Spend{
		Budgets: activities.Budgets{
			ChatTokens: c.BudgetChatTokens, SenderTokens: c.BudgetSenderTokens, DeploymentTokens: c.BudgetDeploymentTokens,
			ChatUSD: c.BudgetChatUSD, SenderUSD: c.BudgetSenderUSD, DeploymentUSD: c.BudgetDeploymentUSD,
		},
		Breakers: activities.Breakers{
			RepeatCalls: c.BreakerRepeatCalls, MaxSteps: c.BreakerMaxSteps,
			HeartbeatSame: c.BreakerHeartbeatSame, HeartbeatBackoff: c.BreakerHeartbeatBackoff, HeartbeatBackoffMax: c.BreakerHeartbeatBackoffMax,
			Failures: c.BreakerFailures, Cooloff: c.BreakerCooloff,
		},
		Prices:     prices,
		Deployment: c.TaskQueue,
		ResetHour:  c.BudgetResetHour,
		Location:   c.budgetLocation(),
		Store:      st,
	}
}
