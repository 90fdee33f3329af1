package activities

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/pipeline"
)

// Spend holds the budgets and the breakers every model call passes: the
// model steps of turns (heartbeat turns among them) and /compact's
// summaries. Both live here, in the activities, and their counts in the
// store, so that they hold across workers and restarts without a command
// more in the session's history.
//
// Budgets are tokens, and money where the provider reports a cost or the
// operator set the model's price, per budget-day for a chat, a sender
// (the batch's last sender; heartbeats and /compact have none) and the
// deployment (its task queue). A call is allowed while each applicable
// count is below its limit (plus what an owner added for the day), and
// counted from the usage the provider reports once it answered (an
// estimate when it reports none). Counts are atomic upserts in the
// store, so workers counting at once lose nothing; the checks are not
// reservations, so calls already in flight when a budget runs out still
// count: a budget is overspent by at most the calls in flight at once
// times the largest call.
//
// A refused turn does not reach the model: the first refused turn of a
// session in a budget-day answers with a short notice, every later one
// with pipeline.SilentToken (the session stays silent, its messages
// acknowledged and kept as ever), and a heartbeat turn with
// pipeline.HeartbeatToken.
//
// Breakers: a turn whose tool calls repeat one call (same tool, same
// arguments) more than RepeatCalls times, or that reaches MaxSteps model
// steps, is stopped with a message as its answer; a heartbeat that
// answers the same HeartbeatSame times in a row backs off (its ticks
// answer HEARTBEAT_OK without the model) for HeartbeatBackoff, doubled at
// each trip up to HeartbeatBackoffMax, until it answers differently; a
// session whose turns fail the same way Failures times in a row stops
// calling the model for Cooloff, with one notice. Every trip is logged,
// counted (MetricBreakerTrips) and recorded in the store (RecordTrip).
type Spend struct {
	Budgets  Budgets
	Breakers Breakers
	// Prices are the operator's prices per model name, for providers
	// that report no cost; a model without one counts no money.
	Prices map[string]Price
	// Deployment names the deployment's budget: the task queue.
	Deployment string
	// ResetHour is the hour of the day, in Location, at which a
	// budget-day begins.
	ResetHour int
	Location  *time.Location
	Store     SpendStore
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// Budgets are the limits per budget-day; zero is no limit.
type Budgets struct {
	ChatTokens, SenderTokens, DeploymentTokens int64
	ChatUSD, SenderUSD, DeploymentUSD          float64
}

// Breakers are the breakers' thresholds; zero turns one off.
type Breakers struct {
	RepeatCalls         int
	MaxSteps            int
	HeartbeatSame       int
	HeartbeatBackoff    time.Duration
	HeartbeatBackoffMax time.Duration
	Failures            int
	Cooloff             time.Duration
}

// Price is a model's price in US dollars per million tokens.
type Price struct {
	InputPerMillion, OutputPerMillion float64
}

// SpendStore is the part of the store the budgets and breakers use;
// *store.Store is the real one.
type SpendStore interface {
	BudgetUsage(ctx context.Context, keys []store.BudgetKey) (map[store.BudgetKey]store.BudgetUsage, error)
	AddSpend(ctx context.Context, keys []store.BudgetKey, tokens int64, costUSD float64, now time.Time) error
	RaiseBudgetOnce(ctx context.Context, k store.BudgetKey, raise string, tokens int64, usd float64, now time.Time) (bool, error)
	Refused(ctx context.Context, day, sessionID, turnID string, now time.Time) (bool, error)
	Guard(ctx context.Context, sessionID string) (store.Guard, error)
	UpdateGuard(ctx context.Context, sessionID string, now time.Time, change func(*store.Guard) bool) (store.Guard, error)
	RecordTrip(ctx context.Context, t store.Trip) error
}

// The series of the budgets and breakers, recorded through the worker's
// metrics handler.
const (
	// MetricBudgetTokens counts the tokens counted against the budgets,
	// by kind (turn, heartbeat, compact).
	MetricBudgetTokens = "replyflow_budget_tokens"
	// MetricBudgetCost counts the money counted, in millionths of a US
	// dollar, by kind.
	MetricBudgetCost = "replyflow_budget_cost_microusd"
	// MetricBudgetRefused counts the model calls refused by a spent
	// budget, by scope (chat, sender, deployment).
	MetricBudgetRefused = "replyflow_budget_refused"
	// MetricBreakerTrips counts the breakers' trips, by kind.
	MetricBreakerTrips = "replyflow_breaker_trips"
)

// The kinds of breaker trips.
const (
	TripRepeat    = "repeat"
	TripSteps     = "steps"
	TripHeartbeat = "heartbeat"
	TripFailures  = "failures"
)

// The kinds of model calls the budgets count.
const (
	callTurn      = "turn"
	callHeartbeat = "heartbeat"
	callCompact   = "compact"
	callGate      = "gate"
)

func (s *Spend) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// BudgetDay is the budget-day now falls in ("2006-01-02"), and when it
// ends.
func (s *Spend) BudgetDay(now time.Time) (string, time.Time) {
	loc := s.Location
	if loc == nil {
		loc = time.UTC
	}
	t := now.In(loc)
	start := time.Date(t.Year(), t.Month(), t.Day(), s.ResetHour, 0, 0, 0, loc)
	if t.Before(start) {
		start = time.Date(t.Year(), t.Month(), t.Day()-1, s.ResetHour, 0, 0, 0, loc)
	}
	return start.Format("2006-01-02"), time.Date(start.Year(), start.Month(), start.Day()+1, s.ResetHour, 0, 0, 0, loc)
}

// isHeartbeatTurn: the session asks heartbeat turns with one message
// from the sender "heartbeat", whose ID is "heartbeat/<tick>".
func isHeartbeatTurn(req pipeline.TurnRequest) bool {
	if len(req.Messages) == 0 {
		return false
	}
	for _, m := range req.Messages {
		if m.SenderID != "heartbeat" || !strings.HasPrefix(m.MessageID, "heartbeat/") {
			return false
		}
	}
	return true
}

// metricsOf is the worker's metrics handler in an activity, and one
// that records nothing elsewhere.
func metricsOf(ctx context.Context) client.MetricsHandler {
	if activity.IsActivity(ctx) {
		return activity.GetMetricsHandler(ctx)
	}
	return client.MetricsNopHandler
}

// turnKind is the kind a turn's model call counts as.
func turnKind(req pipeline.TurnRequest) string {
	if isHeartbeatTurn(req) {
		return callHeartbeat
	}
	return callTurn
}

// errorType is the type of a model attempt's ApplicationError.
func errorType(err error) string {
	var app *temporal.ApplicationError
	if errors.As(err, &app) {
		return app.Type()
	}
	return pipeline.ErrOverloaded
}

// budgetSubject is one budget a call counts against, with its limits.
type budgetSubject struct {
	key    store.BudgetKey
	tokens int64
	usd    float64
	// whose says whose budget it is, in the notice.
	whose string
}

// subjects are the budgets of a call in session key, for sender ("" for
// none), on day.
func (s *Spend) subjects(key pipeline.SessionKey, sender, day string) []budgetSubject {
	chat := key
	chat.Sender = ""
	out := []budgetSubject{{key: store.BudgetKey{Day: day, Scope: store.ScopeChat, Subject: chat.WorkflowID()}, tokens: s.Budgets.ChatTokens, usd: s.Budgets.ChatUSD, whose: "This chat's"}}
	if sender != "" {
		out = append(out, budgetSubject{key: store.BudgetKey{Day: day, Scope: store.ScopeSender, Subject: key.Channel + ":" + sender}, tokens: s.Budgets.SenderTokens, usd: s.Budgets.SenderUSD, whose: "Your"})
	}
	return append(out, budgetSubject{key: store.BudgetKey{Day: day, Scope: store.ScopeDeployment, Subject: s.Deployment}, tokens: s.Budgets.DeploymentTokens, usd: s.Budgets.DeploymentUSD, whose: "The agent's"})
}

// turnSender is whose budget a turn's step counts against: the batch's
// last sender; none for a heartbeat turn.
func turnSender(req pipeline.TurnRequest) string {
	if isHeartbeatTurn(req) || len(req.Messages) == 0 {
		return ""
	}
	return req.Messages[len(req.Messages)-1].SenderID
}

// spentBudget returns the first of subjects whose budget is spent, if
// any.
func (s *Spend) spentBudget(ctx context.Context, subjects []budgetSubject) (*budgetSubject, error) {
	keys := make([]store.BudgetKey, 0, len(subjects))
	for _, b := range subjects {
		if b.tokens > 0 || b.usd > 0 {
			keys = append(keys, b.key)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	usage, err := s.Store.BudgetUsage(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("check the spend budgets (is the store reachable? REPLYFLOW_STORE_DSN): %w", err)
	}
	for i, b := range subjects {
		u, ok := usage[b.key]
		if !ok {
			continue
		}
		if b.tokens > 0 && u.Tokens >= b.tokens+u.RaisedTokens || b.usd > 0 && u.CostUSD >= b.usd+u.RaisedUSD {
			return &subjects[i], nil
		}
	}
	return nil, nil
}

// admission is what admit decided: refused is the answer of a step that
// must not reach the model; guard is the session's breaker state as read.
type admission struct {
	refused *pipeline.TurnResult
	guard   store.Guard
}

// admit decides whether a turn's step may call the model: the step
// breaker, a heartbeat's back-off, a cool-off, then the budgets.
func (s *Spend) admit(ctx context.Context, logger *slog.Logger, req pipeline.TurnRequest) (admission, error) {
	if s == nil || s.Store == nil {
		return admission{}, nil
	}
	now, sid := s.now(), req.Session.WorkflowID()
	heartbeat := isHeartbeatTurn(req)
	var held *pipeline.Hold
	answer := func(text string) (admission, error) {
		return admission{refused: &pipeline.TurnResult{Reply: text, Model: req.Model, Held: held}}, nil
	}
	if n := s.Breakers.MaxSteps; n > 0 && req.Step >= n {
		s.trip(ctx, logger, store.Trip{SessionID: sid, TurnID: req.TurnID, Kind: TripSteps, Detail: fmt.Sprintf("step %d of the turn, at most %d", req.Step+1, n), At: now})
		return answer(fmt.Sprintf("⚠️ I stopped here: this request took %d steps, more than I may take for one. Please ask again in smaller parts.", n))
	}
	guard, err := s.Store.Guard(ctx, sid)
	if err != nil {
		return admission{}, fmt.Errorf("check the breakers of %s (is the store reachable? REPLYFLOW_STORE_DSN): %w", sid, err)
	}
	if heartbeat && now.Before(guard.HeartbeatUntil) {
		logger.Debug("Heartbeat backs off; answered without the model", "session", sid, "until", guard.HeartbeatUntil)
		return answer(pipeline.HeartbeatToken)
	}
	if now.Before(guard.CooloffUntil) {
		held = &pipeline.Hold{Reason: HoldCooloff, Until: guard.CooloffUntil.UTC()}
		if heartbeat {
			return answer(pipeline.HeartbeatToken)
		}
		until := guard.CooloffUntil
		g, err := s.Store.UpdateGuard(ctx, sid, now, func(g *store.Guard) bool {
			if g.CooloffNoticeTurn != "" {
				return false
			}
			g.CooloffNoticeTurn = req.TurnID
			return true
		})
		if err != nil {
			return admission{}, err
		}
		if g.CooloffNoticeTurn != req.TurnID {
			return answer(pipeline.SilentToken)
		}
		return answer(fmt.Sprintf("⚠️ The model kept failing here (%s), so I pause until %s. Your messages are kept; ask again after that.", guard.FailureType, s.clock(until)))
	}
	day, resets := s.BudgetDay(now)
	spent, err := s.spentBudget(ctx, s.subjects(req.Session, turnSender(req), day))
	if err != nil || spent == nil {
		return admission{guard: guard}, err
	}
	metricsOf(ctx).WithTags(map[string]string{"scope": spent.key.Scope}).Counter(MetricBudgetRefused).Inc(1)
	held = &pipeline.Hold{Reason: holdBudget + spent.key.Scope, Until: resets.UTC()}
	if heartbeat {
		return answer(pipeline.HeartbeatToken)
	}
	noticed, err := s.Store.Refused(ctx, day, sid, req.TurnID, now)
	if err != nil {
		return admission{}, err
	}
	if !noticed {
		logger.Debug("Budget spent; turn answered silently", "session", sid, "scope", spent.key.Scope)
		return answer(pipeline.SilentToken)
	}
	logger.Warn("Budget spent: the session's turns get no model call until the budget-day ends or an owner raises it (replyflow budget raise)",
		"session", sid, "turn", req.TurnID, "scope", spent.key.Scope, "subject", spent.key.Subject, "day", day, "resets", resets)
	return answer(s.budgetNotice(spent, resets))
}

// The reasons of a hold (pipeline.Hold): a breaker's cool-off, or a
// spent budget, by its scope ("budget:chat").
const (
	HoldCooloff = "cooloff"
	holdBudget  = "budget:"
)

// currentHold is the session's hold now, for a step answered without the
// model that is not a refusal (/budget): nil when the session may call
// the model.
func (s *Spend) currentHold(ctx context.Context, req pipeline.TurnRequest) (*pipeline.Hold, error) {
	if s == nil || s.Store == nil {
		return nil, nil
	}
	now, sid := s.now(), req.Session.WorkflowID()
	guard, err := s.Store.Guard(ctx, sid)
	if err != nil {
		return nil, fmt.Errorf("check the breakers of %s (is the store reachable? REPLYFLOW_STORE_DSN): %w", sid, err)
	}
	if now.Before(guard.CooloffUntil) {
		return &pipeline.Hold{Reason: HoldCooloff, Until: guard.CooloffUntil.UTC()}, nil
	}
	day, resets := s.BudgetDay(now)
	spent, err := s.spentBudget(ctx, s.subjects(req.Session, turnSender(req), day))
	if err != nil || spent == nil {
		return nil, err
	}
	return &pipeline.Hold{Reason: holdBudget + spent.key.Scope, Until: resets.UTC()}, nil
}

// budgetNotice is the one notice of a spent budget.
func (s *Spend) budgetNotice(b *budgetSubject, resets time.Time) string {
	return fmt.Sprintf("⚠️ %s daily budget is spent, so I stay quiet until %s. Your messages are kept; an owner can raise the budget for today.", b.whose, s.clock(resets))
}

// clock renders a time for a notice, in the budgets' time zone.
func (s *Spend) clock(t time.Time) string {
	loc := s.Location
	if loc == nil {
		loc = time.UTC
	}
	return t.In(loc).Format("15:04 MST, Jan 2")
}

// trip logs, counts and records a breaker's trip. The record is for the
// operator: a store that cannot take it is logged, and the turn goes on.
func (s *Spend) trip(ctx context.Context, logger *slog.Logger, t store.Trip) {
	logger.Warn("Breaker tripped", "session", t.SessionID, "turn", t.TurnID, "kind", t.Kind, "detail", t.Detail, "until", t.Until)
	metricsOf(ctx).WithTags(map[string]string{"kind": t.Kind}).Counter(MetricBreakerTrips).Inc(1)
	if err := s.Store.RecordTrip(ctx, t); err != nil {
		logger.Warn("Breaker trip not recorded in the store; `replyflow budget list` will not show it", "session", t.SessionID, "kind", t.Kind, "error", err)
	}
}

// counted counts one model call's usage against its budgets. The call
// was made: a count the store cannot take is logged, never a reason to
// ask the model again.
func (s *Spend) counted(ctx context.Context, logger *slog.Logger, key pipeline.SessionKey, sender, model, kind string, usage pipeline.Usage, estimate func() int64) {
	if s == nil || s.Store == nil {
		return
	}
	tokens := usage.InputTokens + usage.OutputTokens
	if tokens == 0 {
		// A provider that reports nothing still spends: the estimate
		// counts, so that no model escapes the budgets.
		tokens = estimate()
	}
	cost := usage.CostUSD
	if !usage.HasCost {
		cost = 0
		if p, ok := s.Prices[model]; ok {
			cost = (float64(usage.InputTokens)*p.InputPerMillion + float64(usage.OutputTokens)*p.OutputPerMillion) / 1e6
		}
	}
	now := s.now()
	day, _ := s.BudgetDay(now)
	subjects := s.subjects(key, sender, day)
	keys := make([]store.BudgetKey, len(subjects))
	for i, b := range subjects {
		keys[i] = b.key
	}
	metrics := metricsOf(ctx).WithTags(map[string]string{"kind": kind})
	metrics.Counter(MetricBudgetTokens).Inc(tokens)
	metrics.Counter(MetricBudgetCost).Inc(int64(cost * 1e6))
	if err := s.Store.AddSpend(ctx, keys, tokens, cost, now); err != nil {
		logger.Warn("Model usage not counted against the budgets (is the store reachable? REPLYFLOW_STORE_DSN)", "session", key.WorkflowID(), "tokens", tokens, "error", err)
	}
}

// estimateTokens is what a prompt and its answer would count, for a
// provider that reports no usage.
func estimateTokens(p models.Prompt, answer models.Completion) int64 {
	n := pipeline.EstimateTokens(p.System) + pipeline.EstimateTokens(answer.Text)
	for _, m := range p.Messages {
		n += pipeline.EstimateTokens(m.Text)
	}
	for _, c := range answer.ToolCalls {
		n += pipeline.EstimateTokens(c.Name + c.Arguments)
	}
	return int64(n)
}

// repeated is the stop message when answer's tool calls, with the turn's
// earlier rounds, repeat one call more than RepeatCalls times; "" when
// they do not.
func (s *Spend) repeated(ctx context.Context, logger *slog.Logger, req pipeline.TurnRequest, calls []pipeline.ToolCall) string {
	if s == nil || s.Store == nil || s.Breakers.RepeatCalls <= 0 || len(calls) == 0 {
		return ""
	}
	n := s.Breakers.RepeatCalls
	seen := map[string]int{}
	for _, r := range req.Rounds {
		for _, c := range r.Calls {
			seen[callKey(c)]++
		}
	}
	for _, c := range calls {
		k := callKey(c)
		seen[k]++
		if seen[k] > n {
			s.trip(ctx, logger, store.Trip{SessionID: req.Session.WorkflowID(), TurnID: req.TurnID, Kind: TripRepeat,
				Detail: fmt.Sprintf("%s called %d times with the same arguments, at most %d", c.Name, seen[k], n), At: s.now()})
			return fmt.Sprintf("⚠️ I stopped here: I kept calling %s with the same arguments (%d times). Please rephrase, or ask again later.", c.Name, seen[k])
		}
	}
	return ""
}

// callKey is a tool call's name and arguments, the arguments in one
// form whatever their spacing and key order.
func callKey(c pipeline.ToolCall) string {
	args := strings.TrimSpace(c.Arguments)
	var v any
	if json.Unmarshal([]byte(args), &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = string(b)
		}
	}
	return c.Name + "\x00" + args
}

// heartbeatAnswered follows a heartbeat's answers: the same one
// HeartbeatSame times in a row backs the heartbeat off, a different one
// ends the back-off. It returns the trip, if this answer tripped it.
func (s *Spend) heartbeatAnswered(ctx context.Context, logger *slog.Logger, req pipeline.TurnRequest, text string) *store.Trip {
	if s == nil || s.Store == nil || s.Breakers.HeartbeatSame <= 0 {
		return nil
	}
	k := s.Breakers.HeartbeatSame
	sum := sha256.Sum256([]byte(strings.ToLower(strings.TrimSpace(text))))
	hash := hex.EncodeToString(sum[:8])
	now, sid := s.now(), req.Session.WorkflowID()
	var tripped *store.Trip
	_, err := s.Store.UpdateGuard(ctx, sid, now, func(g *store.Guard) bool {
		tripped = nil
		if g.HeartbeatAnswer != hash {
			g.HeartbeatAnswer, g.HeartbeatSame, g.HeartbeatLevel, g.HeartbeatUntil = hash, 1, 0, time.Time{}
			return true
		}
		g.HeartbeatSame++
		if g.HeartbeatSame < k {
			return true
		}
		wait := s.Breakers.HeartbeatBackoff << min(g.HeartbeatLevel, 16)
		if m := s.Breakers.HeartbeatBackoffMax; m > 0 && wait > m {
			wait = m
		}
		g.HeartbeatLevel++
		g.HeartbeatUntil = now.Add(wait)
		tripped = &store.Trip{SessionID: sid, TurnID: req.TurnID, Kind: TripHeartbeat, Until: g.HeartbeatUntil, At: now,
			Detail: fmt.Sprintf("the same answer %d times in a row; ticks answer HEARTBEAT_OK for %s", g.HeartbeatSame, wait)}
		return true
	})
	if err != nil {
		logger.Warn("Heartbeat answer not followed by its breaker", "session", sid, "error", err)
		return nil
	}
	if tripped != nil {
		s.trip(ctx, logger, *tripped)
	}
	return tripped
}

// failed follows a session's model failures: turns failing the same way
// Failures times in a row start a cool-off. The attempts of one turn
// count once. A failure the sender's own input causes is not counted and
// leaves a run as it is: it says nothing about the model, and counting it
// would let one member of a group hold the whole chat.
func (s *Spend) failed(ctx context.Context, logger *slog.Logger, req pipeline.TurnRequest, errType string) {
	if s == nil || s.Store == nil || s.Breakers.Failures <= 0 || causedByInput(errType) {
		return
	}
	f := s.Breakers.Failures
	now, sid := s.now(), req.Session.WorkflowID()
	var tripped *store.Trip
	_, err := s.Store.UpdateGuard(ctx, sid, now, func(g *store.Guard) bool {
		tripped = nil
		if g.FailureTurn == req.TurnID && g.FailureType == errType {
			return false
		}
		if g.FailureType == errType {
			g.Failures++
		} else {
			g.FailureType, g.Failures = errType, 1
		}
		g.FailureTurn = req.TurnID
		if g.Failures >= f {
			g.CooloffUntil, g.CooloffNoticeTurn, g.Failures = now.Add(s.Breakers.Cooloff), "", 0
			tripped = &store.Trip{SessionID: sid, TurnID: req.TurnID, Kind: TripFailures, Until: g.CooloffUntil, At: now,
				Detail: fmt.Sprintf("%d turns in a row failed with %s; no model call for %s", f, errType, s.Breakers.Cooloff)}
		}
		return true
	})
	if err != nil {
		logger.Warn("Model failure not followed by its breaker", "session", sid, "error", err)
		return
	}
	if tripped != nil {
		s.trip(ctx, logger, *tripped)
	}
}

// causedByInput is true for the error types a turn's input causes, not
// the model: a refusal or content filter, and a context the input
// overflows (the workflow starts a new transcript first, so an overflow
// that remains is the turn's own messages).
func causedByInput(errType string) bool {
	return errType == pipeline.ErrContentFilter || errType == pipeline.ErrContextOverflow
}

// succeeded ends a run of failures: the next failure starts a new one.
func (s *Spend) succeeded(ctx context.Context, logger *slog.Logger, req pipeline.TurnRequest, guard store.Guard) {
	if s == nil || s.Store == nil || guard.Failures == 0 {
		return
	}
	sid := req.Session.WorkflowID()
	if _, err := s.Store.UpdateGuard(ctx, sid, s.now(), func(g *store.Guard) bool {
		g.FailureType, g.FailureTurn, g.Failures = "", "", 0
		return true
	}); err != nil {
		logger.Warn("Model success not followed by its breaker", "session", sid, "error", err)
	}
}

// admitCompaction refuses a /compact whose chat, sender (who asked) or
// deployment budget is spent, as a non-retryable ErrBilling (the session
// answers that the conversation could not be compacted).
func (s *Spend) admitCompaction(ctx context.Context, req pipeline.CompactRequest) error {
	return s.admitCall(ctx, req.Session, req.Sender, "/compact")
}

// admitGate refuses a gate check whose chat, sender (the batch's last)
// or deployment budget is spent, as a non-retryable ErrBilling: the
// session skips the batch, as it does when the gate fails, and nothing
// would be answered anyway.
func (s *Spend) admitGate(ctx context.Context, req pipeline.GateRequest) error {
	return s.admitCall(ctx, req.Session, gateSender(req), "the gate check")
}

// gateSender is the sender a gate check counts against: the batch's last.
func gateSender(req pipeline.GateRequest) string {
	if len(req.Batch) == 0 {
		return ""
	}
	return req.Batch[len(req.Batch)-1].SenderID
}

// admitCall refuses a model call outside a turn (what names it) when one
// of its budgets is spent.
func (s *Spend) admitCall(ctx context.Context, key pipeline.SessionKey, sender, what string) error {
	if s == nil || s.Store == nil {
		return nil
	}
	now := s.now()
	day, resets := s.BudgetDay(now)
	spent, err := s.spentBudget(ctx, s.subjects(key, sender, day))
	if err != nil {
		return err
	}
	if spent != nil {
		metricsOf(ctx).WithTags(map[string]string{"scope": spent.key.Scope}).Counter(MetricBudgetRefused).Inc(1)
		return temporal.NewNonRetryableApplicationError(
			fmt.Sprintf("%s of %s not run: the %s budget of %s is spent until %s (an owner raises it with `replyflow budget raise`)", what, key.WorkflowID(), spent.key.Scope, spent.key.Subject, s.clock(resets)),
			pipeline.ErrBilling, nil)
	}
	return nil
}
