package activities

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/replyflow/replyflow/activities/models"
	"github.com/replyflow/replyflow/activities/store"
	"github.com/replyflow/replyflow/adapters"
	"github.com/replyflow/replyflow/pipeline"
)

// meteredModel answers with a fixed usage, or the answer or error a test
// sets, and counts its calls.
type meteredModel struct {
	mu        sync.Mutex
	calls     atomic.Int32
	usage     pipeline.Usage
	text      string
	toolCalls []pipeline.ToolCall
	err       error
	// gate, when set, holds every call until it is closed; arrived,
	// when set, is called as each call arrives.
	gate    chan struct{}
	arrived func()
}

func (*meteredModel) Name() string { return "test/metered" }

func (m *meteredModel) Complete(ctx context.Context, _ models.Prompt) (models.Completion, error) {
	m.calls.Add(1)
	if m.arrived != nil {
		m.arrived()
	}
	if m.gate != nil {
		select {
		case <-m.gate:
		case <-ctx.Done():
			return models.Completion{}, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err != nil {
		return models.Completion{}, m.err
	}
	return models.Completion{Text: m.text, ToolCalls: m.toolCalls, Usage: m.usage}, nil
}

func (m *meteredModel) set(f func(*meteredModel)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m)
}

// testClock is the clock the budgets and breakers read.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

type spendFixture struct {
	acts  *Activities
	model *meteredModel
	clock *testClock
	db    *store.Store
}

func newSpendFixture(t *testing.T, dsn string, spend Spend) *spendFixture {
	t.Helper()
	db, err := store.Open(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	// 22:30 in Berlin on Nov 27: the budget-day starting at 06:00 began
	// that morning and ends at 06:00 the next.
	clock := &testClock{now: time.Date(2026, 11, 27, 22, 30, 0, 0, berlin)}
	model := &meteredModel{text: "hello", usage: pipeline.Usage{InputTokens: 60, OutputTokens: 40}}
	spend.Store, spend.Now, spend.Location, spend.ResetHour = db, clock.Now, berlin, 6
	if spend.Deployment == "" {
		spend.Deployment = "replyflow"
	}
	acts := &Activities{Models: only{model}, Store: db, Spend: &spend, Logger: slog.Default(),
		Outbound: map[string]adapters.Outbound{"webchat": &fakeOutbound{}}}
	return &spendFixture{acts: acts, model: model, clock: clock, db: db}
}

func sqliteDSN(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") }

var turnSeq atomic.Int64

func (f *spendFixture) turn(t *testing.T, sender string) pipeline.TurnResult {
	t.Helper()
	id := fmt.Sprintf("turn-%d", turnSeq.Add(1))
	req := pipeline.TurnRequest{Session: session, TurnID: id, Model: "test/metered", Text: "hi",
		Messages: []pipeline.TurnMessage{{MessageID: id, SenderID: sender, Text: "hi", At: f.clock.Now()}}}
	return f.step(t, req)
}

func (f *spendFixture) step(t *testing.T, req pipeline.TurnRequest) pipeline.TurnResult {
	t.Helper()
	v, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.AgentTurn, req)
	require.NoError(t, err)
	var res pipeline.TurnResult
	require.NoError(t, v.Get(&res))
	return res
}

func heartbeatTurn(tick string, at time.Time) pipeline.TurnRequest {
	return pipeline.TurnRequest{Session: session, TurnID: "hb-" + tick, Model: "test/metered", Text: "checklist",
		Messages: []pipeline.TurnMessage{{MessageID: "heartbeat/" + tick, SenderID: "heartbeat", SenderName: "heartbeat", Text: "checklist", At: at}}}
}

// A chat's budget spent: one notice, then silence, no model call; the
// budget resets at the stated hour in its time zone; a raise lets the
// chat talk again the same day.
func TestASpentBudgetGivesOneNoticeThenSilenceAndResetsAtTheHour(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 250}})
	for range 3 {
		within := f.turn(t, "alice")
		assert.Equal(t, "hello", within.Reply, "within the budget: 100 tokens a turn, 300 counted after the third")
		assert.Nil(t, within.Held, "a step let through holds nothing")
	}
	require.EqualValues(t, 3, f.model.calls.Load())

	notice := f.turn(t, "bob")
	assert.Contains(t, notice.Reply, "This chat's daily budget is spent")
	require.NotNil(t, notice.Held, "the session learns it is held, and until when")
	assert.Equal(t, pipeline.Hold{Reason: "budget:chat", Until: time.Date(2026, 11, 28, 5, 0, 0, 0, time.UTC)}, *notice.Held)
	assert.Contains(t, notice.Reply, "06:00 CET, Nov 28", "says when it resets, in the budgets' time zone")
	assert.Empty(t, notice.ToolCalls)
	for range 3 {
		assert.Equal(t, pipeline.SilentToken, f.turn(t, "alice").Reply, "one notice a day, then silence")
	}
	assert.EqualValues(t, 3, f.model.calls.Load(), "no model call once spent")

	fresh := pipeline.TurnRequest{Session: session, TurnID: "after-new", Model: "test/metered", NewTranscript: true,
		Messages: []pipeline.TurnMessage{{MessageID: "n1", SenderID: "alice"}}}
	assert.Equal(t, pipeline.SilentToken, f.step(t, fresh).Reply)
	entry, err := f.db.SessionEntry(context.Background(), session.WorkflowID())
	require.NoError(t, err)
	assert.Equal(t, session.WorkflowID()+"#after-new", entry.TranscriptID, "a /new asked of a refused step still starts the new transcript")

	hb := f.step(t, heartbeatTurn("1", f.clock.Now()))
	assert.Equal(t, pipeline.HeartbeatToken, hb.Reply, "a heartbeat turn is refused silently too")

	f.clock.advance(7*time.Hour + 29*time.Minute) // 05:59 next day
	assert.Equal(t, pipeline.SilentToken, f.turn(t, "alice").Reply, "the budget-day ends at 06:00, not at midnight")
	f.clock.advance(time.Minute)
	assert.Equal(t, "hello", f.turn(t, "alice").Reply, "a new budget-day")
	assert.EqualValues(t, 4, f.model.calls.Load())

	// Spend the new day, then raise it.
	for range 2 {
		f.turn(t, "alice")
	}
	assert.Contains(t, f.turn(t, "alice").Reply, "budget is spent", "the new day's notice")
	day, _ := f.acts.Spend.BudgetDay(f.clock.Now())
	require.NoError(t, f.db.RaiseBudget(context.Background(), store.BudgetKey{Day: day, Scope: store.ScopeChat, Subject: session.WorkflowID()}, 100, 0, f.clock.Now()))
	assert.Equal(t, "hello", f.turn(t, "alice").Reply, "raised for the day: the chat talks again")
	assert.Contains(t, f.turn(t, "alice").Reply, "budget is spent", "spent again, told again")
	assert.Equal(t, pipeline.SilentToken, f.turn(t, "alice").Reply)
}

// A sender's budget is the batch's last sender's, and money counts where
// the operator set the model's price.
func TestSenderAndMoneyBudgets(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{SenderTokens: 150, DeploymentUSD: 0.002},
		Prices: map[string]Price{"test/metered": {InputPerMillion: 5, OutputPerMillion: 15}}})
	assert.Equal(t, "hello", f.turn(t, "alice").Reply)
	assert.Equal(t, "hello", f.turn(t, "alice").Reply)
	assert.Contains(t, f.turn(t, "alice").Reply, "Your daily budget is spent")
	assert.Equal(t, pipeline.SilentToken, f.turn(t, "alice").Reply, "the session's notice is given")
	assert.Equal(t, "hello", f.turn(t, "bob").Reply, "another sender has budget left")
	// 3 calls × (60×5 + 40×15)/1e6 = $0.0027 ≥ $0.002.
	assert.Equal(t, pipeline.SilentToken, f.turn(t, "carol").Reply, "the deployment's money is spent")
	assert.EqualValues(t, 3, f.model.calls.Load())
	day, _ := f.acts.Spend.BudgetDay(f.clock.Now())
	got, err := f.db.BudgetUsage(context.Background(), []store.BudgetKey{{Day: day, Scope: store.ScopeDeployment, Subject: "replyflow"}})
	require.NoError(t, err)
	for _, u := range got {
		assert.EqualValues(t, 300, u.Tokens)
		assert.InDelta(t, 0.0027, u.CostUSD, 1e-9)
	}
}

// A provider's reported cost is counted as reported; a provider that
// reports no usage is counted by estimate.
func TestReportedCostAndEstimatedTokens(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatUSD: 0.01}})
	f.model.set(func(m *meteredModel) {
		m.usage = pipeline.Usage{InputTokens: 1, OutputTokens: 1, CostUSD: 0.006, HasCost: true}
	})
	f.turn(t, "alice")
	f.turn(t, "alice")
	assert.Contains(t, f.turn(t, "alice").Reply, "budget is spent")

	g := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 1}})
	g.model.set(func(m *meteredModel) { m.usage = pipeline.Usage{} })
	g.turn(t, "alice")
	assert.Contains(t, g.turn(t, "alice").Reply, "budget is spent", "an estimate counts when the provider reports nothing")
}

// A turn repeating one tool call is stopped before the call runs again;
// another turn calls the model as ever.
func TestRepeatedToolCallsTripTheBreaker(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Breakers: Breakers{RepeatCalls: 2}})
	call := func(id, args string) pipeline.ToolCall {
		return pipeline.ToolCall{ID: id, Name: "search", Arguments: args}
	}
	f.model.set(func(m *meteredModel) { m.toolCalls = []pipeline.ToolCall{call("c3", `{"q": "x"}`)} })
	req := pipeline.TurnRequest{Session: session, TurnID: "loop", Step: 2, Model: "test/metered", Text: "find",
		Messages: []pipeline.TurnMessage{{MessageID: "m1", SenderID: "alice", Text: "find"}},
		Rounds: []pipeline.ToolRound{
			{Calls: []pipeline.ToolCall{call("c1", `{"q":"x"}`)}, Results: []pipeline.ToolResult{{CallID: "c1", Output: "none"}}},
			{Calls: []pipeline.ToolCall{call("c2", `{ "q" : "x" }`)}, Results: []pipeline.ToolResult{{CallID: "c2", Output: "none"}}},
		}}
	res := f.step(t, req)
	assert.Empty(t, res.ToolCalls, "the third identical call does not run")
	assert.Contains(t, res.Reply, "I kept calling search with the same arguments (3 times)")

	req.Rounds[1].Calls[0].Arguments = `{"q":"y"}`
	res = f.step(t, req)
	assert.Len(t, res.ToolCalls, 1, "different arguments are not a repeat")
	trips, err := f.db.Trips(context.Background(), f.clock.Now().Add(-time.Hour), 10)
	require.NoError(t, err)
	require.Len(t, trips, 1)
	assert.Equal(t, TripRepeat, trips[0].Kind)
}

// A turn past the step breaker is stopped without a model call.
func TestTheStepBreakerStopsATurn(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Breakers: Breakers{MaxSteps: 4}})
	req := pipeline.TurnRequest{Session: session, TurnID: "long", Step: 3, Model: "test/metered", Messages: []pipeline.TurnMessage{{MessageID: "m", SenderID: "alice"}}}
	assert.Equal(t, "hello", f.step(t, req).Reply, "the fourth step runs")
	req.Step = 4
	res := f.step(t, req)
	assert.Contains(t, res.Reply, "this request took 4 steps")
	assert.EqualValues(t, 1, f.model.calls.Load())
}

// A heartbeat that answers the same backs off for a doubling interval
// and recovers once it answers otherwise.
func TestAHeartbeatAnsweringTheSameBacksOff(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Breakers: Breakers{HeartbeatSame: 3, HeartbeatBackoff: time.Hour, HeartbeatBackoffMax: 3 * time.Hour}})
	f.model.set(func(m *meteredModel) { m.text = pipeline.HeartbeatToken })
	tick := 0
	beat := func() string {
		tick++
		f.clock.advance(30 * time.Minute)
		return f.step(t, heartbeatTurn(fmt.Sprint(tick), f.clock.Now())).Reply
	}
	for range 3 {
		assert.Equal(t, pipeline.HeartbeatToken, beat())
	}
	require.EqualValues(t, 3, f.model.calls.Load(), "the third same answer trips")
	beat() // +30m: backs off
	assert.EqualValues(t, 3, f.model.calls.Load(), "backing off: answered without the model")
	beat() // +60m: the hour is over
	assert.EqualValues(t, 4, f.model.calls.Load())
	beat()
	beat()
	beat() // +90m within the doubled back-off of 2h
	assert.EqualValues(t, 4, f.model.calls.Load(), "still the same answer: the back-off doubled")
	beat() // +2h
	assert.EqualValues(t, 5, f.model.calls.Load())

	f.model.set(func(m *meteredModel) { m.text = "The backup failed last night." })
	for range 5 {
		beat()
	}
	assert.EqualValues(t, 5, f.model.calls.Load(), "backs off 3 h, its ceiling")
	assert.Equal(t, "The backup failed last night.", beat(), "a different answer")
	assert.Equal(t, "The backup failed last night.", beat(), "ends the back-off: the next tick asks the model")
	assert.EqualValues(t, 7, f.model.calls.Load())

	assert.Equal(t, "hello", func() string {
		f.model.set(func(m *meteredModel) { m.text = "hello" })
		return f.turn(t, "alice").Reply
	}(), "a user's turn never backs off")
	trips, err := f.db.Trips(context.Background(), time.Time{}, 10)
	require.NoError(t, err)
	assert.Len(t, trips, 3)
}

// Turns failing the same way trip a cool-off with one notice; after it
// the model is asked again, and a success ends the run.
func TestTurnsFailingTheSameWayCoolOff(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Breakers: Breakers{Failures: 3, Cooloff: 10 * time.Minute}})
	f.model.set(func(m *meteredModel) {
		m.err = &models.Error{Type: pipeline.ErrFormat, Model: "test/metered", Err: fmt.Errorf("bad json")}
	})
	fail := func(turn string) {
		t.Helper()
		req := pipeline.TurnRequest{Session: session, TurnID: turn, Model: "test/metered", Messages: []pipeline.TurnMessage{{MessageID: turn, SenderID: "alice"}}}
		_, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.AgentTurn, req)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
	}
	fail("t1")
	fail("t1") // the same turn's retry counts once
	fail("t2")
	assert.Equal(t, "hello", func() string { f.model.set(func(m *meteredModel) { m.err = nil }); return f.turn(t, "alice").Reply }(), "a success ends the run")
	f.model.set(func(m *meteredModel) {
		m.err = &models.Error{Type: pipeline.ErrFormat, Model: "test/metered", Err: fmt.Errorf("bad json")}
	})
	fail("t3")
	fail("t4")
	fail("t5")
	calls := f.model.calls.Load()
	notice := f.turn(t, "alice")
	assert.Contains(t, notice.Reply, "The model kept failing here (Format)")
	require.NotNil(t, notice.Held)
	assert.Equal(t, HoldCooloff, notice.Held.Reason)
	assert.True(t, f.clock.Now().Add(10*time.Minute).Equal(notice.Held.Until), "held until %s", notice.Held.Until)
	assert.Equal(t, pipeline.SilentToken, f.turn(t, "alice").Reply, "one notice per cool-off")
	assert.Equal(t, calls, f.model.calls.Load(), "no model call while cooling off")

	f.clock.advance(10 * time.Minute)
	f.model.set(func(m *meteredModel) { m.err = nil })
	assert.Equal(t, "hello", f.turn(t, "alice").Reply, "after the cool-off the model is asked again")
	trips, err := f.db.Trips(context.Background(), time.Time{}, 10)
	require.NoError(t, err)
	require.Len(t, trips, 1)
	assert.Equal(t, TripFailures, trips[0].Kind)
}

// A gate check is a model call like any other: its usage counts against
// the chat and its sender, and a spent budget refuses it before the call
// (the session then skips the batch, as when the gate fails).
func TestGateChecksCountAndAreRefused(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{SenderTokens: 150}})
	f.model.set(func(m *meteredModel) { m.text = `{"forward": true, "reason": "a question"}` })
	f.acts.Settings.GateModel = "test/metered"
	gate := func() error {
		_, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.GateCheck, pipeline.GateRequest{Session: session,
			Batch: []pipeline.TurnMessage{{MessageID: "g", SenderID: "carol", Text: "anyone?"}}})
		return err
	}
	require.NoError(t, gate())
	require.NoError(t, gate())
	require.EqualValues(t, 2, f.model.calls.Load())
	day, _ := f.acts.Spend.BudgetDay(f.clock.Now())
	usage, err := f.db.BudgetUsage(context.Background(), []store.BudgetKey{{Day: day, Scope: store.ScopeSender, Subject: "webchat:carol"}})
	require.NoError(t, err)
	assert.EqualValues(t, 200, usage[store.BudgetKey{Day: day, Scope: store.ScopeSender, Subject: "webchat:carol"}].Tokens, "both checks counted against their sender")

	var app *temporal.ApplicationError
	require.ErrorAs(t, gate(), &app)
	assert.Equal(t, pipeline.ErrBilling, app.Type())
	assert.True(t, app.NonRetryable())
	assert.EqualValues(t, 2, f.model.calls.Load(), "no model call once the sender's budget is spent")
}

// A spent budget refuses /compact before its model call, and a
// compaction's usage counts.
func TestCompactionCountsAndIsRefused(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 150}})
	f.turn(t, "alice")
	_, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.CompactTranscript, pipeline.CompactRequest{Session: session, Key: "c1", Model: "test/metered"})
	require.NoError(t, err)
	require.EqualValues(t, 2, f.model.calls.Load(), "the summary is a model call")
	f.turn(t, "alice") // now refused: 200 counted
	_, err = newActivityEnv(f.acts).ExecuteActivity(f.acts.CompactTranscript, pipeline.CompactRequest{Session: session, Key: "c2", Model: "test/metered"})
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	assert.Equal(t, pipeline.ErrBilling, app.Type())
	assert.True(t, app.NonRetryable())
	assert.EqualValues(t, 2, f.model.calls.Load())
}

// The deployment's budget is shared by every worker: concurrent turns in
// many sessions overspend it by less than the steps in flight × the
// largest step (here 8 × 100 tokens), on SQLite and on PostgreSQL.
func TestConcurrentTurnsOverspendTheDeploymentBudgetWithinTheMargin(t *testing.T) {
	for name, dsn := range map[string]func(*testing.T) string{"SQLite": sqliteDSN, "PostgreSQL": postgresSchema} {
		t.Run(name, func(t *testing.T) {
			const workers, limit, perStep = 8, 2000, 100
			f := newSpendFixture(t, dsn(t), Spend{Budgets: Budgets{DeploymentTokens: limit}})
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := pipeline.SessionKey{Channel: "webchat", Chat: fmt.Sprintf("room-%d", w)}
					for i := range 100 { // far more than the budget allows
						req := pipeline.TurnRequest{Session: key, TurnID: fmt.Sprintf("t%d", i), Model: "test/metered",
							Messages: []pipeline.TurnMessage{{MessageID: fmt.Sprintf("m%d", i), SenderID: fmt.Sprintf("s%d", w)}}}
						v, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.AgentTurn, req)
						if !assert.NoError(t, err) {
							return
						}
						var res pipeline.TurnResult
						assert.NoError(t, v.Get(&res))
						if res.Reply != "hello" {
							return
						}
					}
				}()
			}
			wg.Wait()
			day, _ := f.acts.Spend.BudgetDay(f.clock.Now())
			key := store.BudgetKey{Day: day, Scope: store.ScopeDeployment, Subject: "replyflow"}
			got, err := f.db.BudgetUsage(context.Background(), []store.BudgetKey{key})
			require.NoError(t, err)
			spent := got[key].Tokens
			assert.EqualValues(t, int64(f.model.calls.Load())*perStep, spent, "every call counted, none lost")
			assert.GreaterOrEqual(t, spent, int64(limit), "the budget was used up")
			assert.Less(t, spent, int64(limit+workers*perStep), "overspent by less than the steps in flight × the largest step")
			t.Logf("%s: %d workers, limit %d, %d tokens a step: spent %d, overspent %d (margin %d)", name, workers, limit, perStep, spent, spent-limit, workers*perStep)
		})
		t.Run(name+", the worst case: every step admitted just below the limit", func(t *testing.T) {
			const workers, limit, perStep = 8, 2000, 100
			f := newSpendFixture(t, dsn(t), Spend{Budgets: Budgets{DeploymentTokens: limit}})
			day, _ := f.acts.Spend.BudgetDay(f.clock.Now())
			key := store.BudgetKey{Day: day, Scope: store.ScopeDeployment, Subject: "replyflow"}
			require.NoError(t, f.db.AddSpend(context.Background(), []store.BudgetKey{key}, limit-1, 0, f.clock.Now()))
			// Every call waits until all are in flight: each was admitted
			// before any was counted.
			f.model.gate = make(chan struct{})
			var arrived atomic.Int32
			f.model.arrived = func() {
				if arrived.Add(1) == workers {
					close(f.model.gate)
				}
			}
			var wg sync.WaitGroup
			for w := range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := pipeline.TurnRequest{Session: pipeline.SessionKey{Channel: "webchat", Chat: fmt.Sprintf("room-%d", w)}, TurnID: "t", Model: "test/metered",
						Messages: []pipeline.TurnMessage{{MessageID: "m", SenderID: fmt.Sprintf("s%d", w)}}}
					_, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.AgentTurn, req)
					assert.NoError(t, err)
				}()
			}
			wg.Wait()
			got, err := f.db.BudgetUsage(context.Background(), []store.BudgetKey{key})
			require.NoError(t, err)
			spent := got[key].Tokens
			assert.EqualValues(t, limit-1+workers*perStep, spent, "all in flight at once: each counted")
			assert.Less(t, spent, int64(limit+workers*perStep), "and still within the margin")
			t.Logf("%s worst case: spent %d, overspent %d (margin %d)", name, spent, spent-limit, workers*perStep)
		})
	}
}

// postgresSchema is a fresh schema on the test PostgreSQL
// (REPLYFLOW_TEST_POSTGRES_DSN, or 127.0.0.1:5432/test), dropped after
// the test; REPLYFLOW_TEST_POSTGRES=off skips the test, and says so.
func postgresSchema(t *testing.T) string {
	if os.Getenv("REPLYFLOW_TEST_POSTGRES") == "off" {
		t.Skip("SKIPPED: PostgreSQL, because REPLYFLOW_TEST_POSTGRES=off")
	}
	base := os.Getenv("REPLYFLOW_TEST_POSTGRES_DSN")
	if base == "" {
		base = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"
	}
	admin, err := sql.Open("pgx", base)
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close() })
	schema := fmt.Sprintf("replyflow_spend_%d_%d", time.Now().UnixNano(), turnSeq.Add(1))
	_, err = admin.Exec("CREATE SCHEMA " + schema)
	require.NoError(t, err, "this test needs PostgreSQL at %s (set REPLYFLOW_TEST_POSTGRES_DSN, or REPLYFLOW_TEST_POSTGRES=off to skip it)", base)
	t.Cleanup(func() { _, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE") })
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	return base + sep + "search_path=" + schema
}

// countingMetrics records counters by name and tags.
type countingMetrics struct {
	mu     *sync.Mutex
	tags   map[string]string
	counts map[string]int64
}

func newCountingMetrics() countingMetrics {
	return countingMetrics{mu: &sync.Mutex{}, counts: map[string]int64{}}
}

func (m countingMetrics) WithTags(tags map[string]string) client.MetricsHandler {
	merged := map[string]string{}
	for k, v := range m.tags {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	return countingMetrics{mu: m.mu, tags: merged, counts: m.counts}
}

func (m countingMetrics) Counter(name string) client.MetricsCounter {
	key := name
	for _, k := range []string{"kind", "scope"} {
		if v, ok := m.tags[k]; ok {
			key += "{" + k + "=" + v + "}"
		}
	}
	return counterFunc(func(n int64) {
		m.mu.Lock()
		defer m.mu.Unlock()
		m.counts[key] += n
	})
}

func (m countingMetrics) Gauge(string) client.MetricsGauge { return client.MetricsNopHandler.Gauge("") }
func (m countingMetrics) Timer(string) client.MetricsTimer { return client.MetricsNopHandler.Timer("") }

func (m countingMetrics) get(key string) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[key]
}

type counterFunc func(int64)

func (f counterFunc) Inc(n int64) { f(n) }

// The worker's metrics count the tokens, the refusals and the trips.
func TestSpendIsCountedInMetrics(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{ChatTokens: 150}, Breakers: Breakers{MaxSteps: 1}})
	metrics := newCountingMetrics()
	run := func(req pipeline.TurnRequest) {
		var suite testsuite.WorkflowTestSuite
		suite.SetMetricsHandler(metrics)
		env := suite.NewTestActivityEnvironment()
		env.RegisterActivity(f.acts)
		_, err := env.ExecuteActivity(f.acts.AgentTurn, req)
		require.NoError(t, err)
	}
	msgs := []pipeline.TurnMessage{{MessageID: "m", SenderID: "alice"}}
	run(pipeline.TurnRequest{Session: session, TurnID: "a", Model: "test/metered", Messages: msgs})
	run(pipeline.TurnRequest{Session: session, TurnID: "b", Model: "test/metered", Messages: msgs})
	run(pipeline.TurnRequest{Session: session, TurnID: "c", Model: "test/metered", Messages: msgs})
	run(pipeline.TurnRequest{Session: session, TurnID: "d", Step: 1, Model: "test/metered", Messages: msgs})
	assert.EqualValues(t, 200, metrics.get(MetricBudgetTokens+"{kind=turn}"))
	assert.EqualValues(t, 1, metrics.get(MetricBudgetRefused+"{scope=chat}"))
	assert.EqualValues(t, 1, metrics.get(MetricBreakerTrips+"{kind=steps}"))
}

// Failures a sender's own input causes (a refusal, a context it
// overflows) do not count toward the session's breaker: one member of a
// group cannot hold the chat by sending what the provider refuses. Real
// failures still trip it.
func TestInputCausedFailuresDoNotTripTheSessionBreaker(t *testing.T) {
	fail := func(t *testing.T, f *spendFixture, turn, errType string) {
		t.Helper()
		f.model.set(func(m *meteredModel) {
			m.err = &models.Error{Type: errType, Model: "test/metered", Err: fmt.Errorf("no")}
		})
		req := pipeline.TurnRequest{Session: session, TurnID: turn, Model: "test/metered", Messages: []pipeline.TurnMessage{{MessageID: turn, SenderID: "mallory"}}}
		_, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.AgentTurn, req)
		var app *temporal.ApplicationError
		require.ErrorAs(t, err, &app)
		require.Equal(t, errType, app.Type())
	}
	for _, errType := range []string{pipeline.ErrContentFilter, pipeline.ErrContextOverflow} {
		t.Run(errType, func(t *testing.T) {
			f := newSpendFixture(t, sqliteDSN(t), Spend{Breakers: Breakers{Failures: 3, Cooloff: 15 * time.Minute}})
			for i := range 3 {
				fail(t, f, fmt.Sprintf("m%d", i), errType)
			}
			calls := f.model.calls.Load()
			f.model.set(func(m *meteredModel) { m.err = nil })
			res := f.turn(t, "bob")
			assert.Equal(t, "hello", res.Reply, "another sender's turn is admitted")
			assert.Nil(t, res.Held)
			assert.Equal(t, calls+1, f.model.calls.Load())
			trips, err := f.db.Trips(context.Background(), time.Time{}, 10)
			require.NoError(t, err)
			assert.Empty(t, trips)
		})
	}
	t.Run("real failures still trip", func(t *testing.T) {
		f := newSpendFixture(t, sqliteDSN(t), Spend{Breakers: Breakers{Failures: 3, Cooloff: 15 * time.Minute}})
		fail(t, f, "r1", pipeline.ErrTimeout)
		fail(t, f, "r2", pipeline.ErrTimeout)
		fail(t, f, "c1", pipeline.ErrContentFilter) // leaves the run as it is
		fail(t, f, "r3", pipeline.ErrTimeout)
		calls := f.model.calls.Load()
		f.model.set(func(m *meteredModel) { m.err = nil })
		res := f.turn(t, "bob")
		require.NotNil(t, res.Held)
		assert.Equal(t, HoldCooloff, res.Held.Reason)
		assert.Equal(t, calls, f.model.calls.Load(), "no model call while cooling off")
		trips, err := f.db.Trips(context.Background(), time.Time{}, 10)
		require.NoError(t, err)
		require.Len(t, trips, 1)
		assert.Equal(t, TripFailures, trips[0].Kind)
	})
}

// /compact counts against who asked, as their turns do: a member whose
// own budget is spent cannot spend the chat's on summaries.
func TestCompactionCountsAgainstWhoAskedAndIsRefusedOnceTheirBudgetIsSpent(t *testing.T) {
	f := newSpendFixture(t, sqliteDSN(t), Spend{Budgets: Budgets{SenderTokens: 150}})
	f.turn(t, "alice")
	compact := func(key, sender string) error {
		_, err := newActivityEnv(f.acts).ExecuteActivity(f.acts.CompactTranscript, pipeline.CompactRequest{Session: session, Key: key, Model: "test/metered", Sender: sender})
		return err
	}
	require.NoError(t, compact("c1", "carol"))
	day, _ := f.acts.Spend.BudgetDay(f.clock.Now())
	carol := store.BudgetKey{Day: day, Scope: store.ScopeSender, Subject: "webchat:carol"}
	usage, err := f.db.BudgetUsage(context.Background(), []store.BudgetKey{carol})
	require.NoError(t, err)
	assert.Positive(t, usage[carol].Tokens, "the summary counted against carol")
	require.NoError(t, compact("c2", "carol"), "within her budget")

	calls := f.model.calls.Load()
	var app *temporal.ApplicationError
	require.ErrorAs(t, compact("c3", "carol"), &app)
	assert.Equal(t, pipeline.ErrBilling, app.Type())
	assert.Equal(t, calls, f.model.calls.Load(), "no model call once her budget is spent")
	require.NoError(t, compact("c4", "dave"), "another member's budget is his own")
}
