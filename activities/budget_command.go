package activities

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// The in-chat /budget command is answered here, by AgentTurn, and not by
// the session: the session's workflow issues the same commands it always
// did (recorded histories replay), sees an ordinary turn, and delivers
// its answer. The answer is no model call: it counts against no budget,
// passes no breaker and is not written to the transcript.

// Bounds of one /budget raise: far above any day's budget, and far below
// what the counts can hold.
const (
	maxRaiseTokens = 1_000_000_000_000
	maxRaiseUSD    = 1_000_000
)

// budgetUsageLine is the answer to a /budget the command does not
// understand.
const budgetUsageLine = "Use /budget to see what is left of today's budgets; owners add to this chat's budget for today with /budget raise 50000, /budget raise 50k or /budget raise $2."

// budgetAsk is a /budget command as read from a message.
type budgetAsk struct {
	raise  bool
	tokens int64
	usd    float64
	// malformed is why the command was not understood; "" when it was.
	malformed string
}

var (
	tokenAmount = regexp.MustCompile(`^(\d+)(\.\d+)?([km]?)$`)
	moneyAmount = regexp.MustCompile(`^\$(\d+)(\.\d+)?$`)
)

// parseBudgetCommand reads a message that is the command /budget (also
// /budget@bot, any case): alone, or `raise` and one amount, tokens (50000,
// 50,000, 50k, 1.5m) or US dollars ($2, $0.50). It is false for any other
// message; a /budget with other words is malformed.
func parseBudgetCommand(text string) (budgetAsk, bool) {
	fields := strings.Fields(text)
	if len(fields) == 0 {
		return budgetAsk{}, false
	}
	head, _, _ := strings.Cut(strings.ToLower(fields[0]), "@")
	if head != "/budget" {
		return budgetAsk{}, false
	}
	switch {
	case len(fields) == 1:
		return budgetAsk{}, true
	case !strings.EqualFold(fields[1], "raise"):
		return budgetAsk{malformed: fmt.Sprintf("/budget takes no %q.", fields[1])}, true
	case len(fields) != 3:
		return budgetAsk{raise: true, malformed: "/budget raise takes one amount."}, true
	}
	ask := budgetAsk{raise: true}
	amount := strings.ToLower(fields[2])
	if m := moneyAmount.FindStringSubmatch(amount); m != nil {
		v, err := strconv.ParseFloat(m[1]+m[2], 64)
		if err != nil || v <= 0 || v > maxRaiseUSD {
			ask.malformed = fmt.Sprintf("%s is not an amount to raise by: more than $0, at most $%d.", fields[2], maxRaiseUSD)
		}
		ask.usd = v
		return ask, true
	}
	m := tokenAmount.FindStringSubmatch(strings.ReplaceAll(amount, ",", ""))
	if m == nil {
		ask.malformed = fmt.Sprintf("%s is not an amount: give tokens (50000 or 50k) or US dollars ($2).", fields[2])
		return ask, true
	}
	v, err := strconv.ParseFloat(m[1]+m[2], 64)
	switch m[3] {
	case "k":
		v *= 1e3
	case "m":
		v *= 1e6
	}
	whole := math.Round(v) // 1.1k is 1100, whatever the float's last bits
	if err != nil || whole < 1 || whole > maxRaiseTokens || math.Abs(v-whole) > 1e-6 {
		ask.malformed = fmt.Sprintf("%s is not a number of tokens to raise by: a whole number from 1 to %s.", fields[2], tokenCount(maxRaiseTokens))
		return ask, true
	}
	ask.tokens = int64(whole)
	return ask, true
}

// budgetCommand answers a turn that is one message, the command /budget,
// without the model; it is false for every other turn. /budget shows what
// this chat, this sender and the deployment spent today, their limits
// and what is left; /budget raise adds to this chat's budget for today,
// for an owner only, decided as the session decides it (the settings'
// owners: REPLYFLOW_OWNERS and those who claimed the agent).
func (a *Activities) budgetCommand(ctx context.Context, req pipeline.TurnRequest) (string, bool, error) {
	if len(req.Messages) != 1 || req.Step != 0 || len(req.Rounds) != 0 || isHeartbeatTurn(req) {
		return "", false, nil
	}
	msg := req.Messages[0]
	ask, ok := parseBudgetCommand(msg.Text)
	if !ok {
		return "", false, nil
	}
	if ask.malformed != "" {
		return "⚠️ " + ask.malformed + " " + budgetUsageLine, true, nil
	}
	s := a.Spend
	if !s.budgetsSet() {
		return "No budget is set here: the model's use is not limited per day.", true, nil
	}
	if !ask.raise {
		text, err := s.budgetReport(ctx, req.Session, msg.SenderID)
		return text, true, err
	}
	sid, who := req.Session.WorkflowID(), req.Session.Channel+":"+msg.SenderID
	settings, err := a.LoadSettings(ctx, req.Session)
	if err != nil {
		return "", false, fmt.Errorf("load the owners of %s to decide a /budget raise (is the store reachable? REPLYFLOW_STORE_DSN): %w", sid, err)
	}
	if !pipeline.Allowed(who, settings.Owners) {
		a.Logger.Info("Budget raise refused: the sender is not an owner", "session", sid, "who", who)
		return "⚠️ Only owners may raise this chat's budget. /budget shows what is left today.", true, nil
	}
	switch {
	case ask.tokens > 0 && s.Budgets.ChatTokens <= 0:
		return "This chat has no daily token budget, so there is nothing to raise. /budget shows the budgets that are set.", true, nil
	case ask.usd > 0 && s.Budgets.ChatUSD <= 0:
		return "This chat has no daily money budget, so there is nothing to raise. /budget shows the budgets that are set.", true, nil
	}
	now := s.now()
	day, _ := s.BudgetDay(now)
	chat := req.Session
	chat.Sender = ""
	key := store.BudgetKey{Day: day, Scope: store.ScopeChat, Subject: chat.WorkflowID()}
	added, err := s.Store.RaiseBudgetOnce(ctx, key, sid+"#"+req.TurnID, ask.tokens, ask.usd, now)
	if err != nil {
		return "", false, fmt.Errorf("raise the budget of %s for %s (is the store reachable? REPLYFLOW_STORE_DSN): %w", key.Subject, day, err)
	}
	if added {
		a.Logger.Info("Chat budget raised by an owner", "session", sid, "scope", key.Scope, "subject", key.Subject, "day", day, "tokens", ask.tokens, "usd", ask.usd, "who", who)
	}
	report, err := s.budgetReport(ctx, req.Session, msg.SenderID)
	if err != nil {
		return "", false, err
	}
	by := tokenCount(ask.tokens) + " tokens"
	if ask.usd > 0 {
		by = dollars(ask.usd)
	}
	return "Raised this chat's budget for today by " + by + ".\n" + report, true, nil
}

// budgetsSet: some budget limits model calls.
func (s *Spend) budgetsSet() bool {
	return s != nil && s.Store != nil && s.Budgets != (Budgets{})
}

// budgetReport is what /budget shows: for this chat, sender and the
// deployment, what was spent today against each limit set, and when the
// budget-day ends.
func (s *Spend) budgetReport(ctx context.Context, key pipeline.SessionKey, sender string) (string, error) {
	now := s.now()
	day, resets := s.BudgetDay(now)
	subjects := s.subjects(key, sender, day)
	keys := make([]store.BudgetKey, len(subjects))
	for i, b := range subjects {
		keys[i] = b.key
	}
	usage, err := s.Store.BudgetUsage(ctx, keys)
	if err != nil {
		return "", fmt.Errorf("read the budgets of %s (is the store reachable? REPLYFLOW_STORE_DSN): %w", key.WorkflowID(), err)
	}
	lines := []string{"Today's budgets:"}
	for _, b := range subjects {
		lines = append(lines, budgetLine(b, usage[b.key]))
	}
	lines = append(lines, "The budget-day resets at "+s.clock(resets)+".")
	if s.Budgets.ChatTokens > 0 || s.Budgets.ChatUSD > 0 {
		lines = append(lines, "Owners add to this chat's budget for today with /budget raise 50k (or $2).")
	}
	return strings.Join(lines, "\n"), nil
}

// budgetLine is one budget's line of /budget.
func budgetLine(b budgetSubject, u store.BudgetUsage) string {
	name := map[string]string{store.ScopeChat: "This chat", store.ScopeSender: "You, in all chats", store.ScopeDeployment: "The whole agent"}[b.key.Scope]
	var parts []string
	if b.tokens > 0 {
		parts = append(parts, spentOf(float64(u.Tokens), float64(b.tokens), float64(u.RaisedTokens), func(v float64) string { return tokenCount(int64(v)) }, " tokens"))
	}
	if b.usd > 0 {
		parts = append(parts, spentOf(u.CostUSD, b.usd, u.RaisedUSD, dollars, ""))
	}
	if len(parts) == 0 {
		return "• " + name + ": no daily limit."
	}
	return "• " + name + ": " + strings.Join(parts, "; ") + "."
}

// spentOf says what was spent of a limit (with what an owner raised it
// by), and what is left; unit follows the limit.
func spentOf(spent, limit, raised float64, show func(float64) string, unit string) string {
	text := show(spent) + " of " + show(limit+raised) + unit + " spent"
	if raised > 0 {
		text += " (" + show(limit) + " + " + show(raised) + " raised by an owner)"
	}
	if left := limit + raised - spent; left > 0 {
		return text + ", " + show(left) + " left"
	}
	return text + ", none left"
}

// tokenCount renders a number of tokens with thousands separators.
func tokenCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// dollars renders US dollars: in cents, or to four decimals where cents
// would round a small amount away.
func dollars(v float64) string {
	if v != 0 && math.Abs(v) < 1 && math.Abs(v*100-math.Round(v*100)) > 1e-9 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
