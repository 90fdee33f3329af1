package store

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpendOnSQLite(t *testing.T) {
	spendSuite(t, func(t *testing.T) string { return filepath.Join(t.TempDir(), "store.db") })
}

func TestSpendOnPostgreSQL(t *testing.T) {
	base := postgresBase(t)
	spendSuite(t, func(t *testing.T) string { return freshDatabase(t, base) })
}

func spendSuite(t *testing.T, dsn func(*testing.T) string) {
	ctx := context.Background()
	open := func(t *testing.T) *Store {
		s, err := Open(ctx, dsn(t))
		require.NoError(t, err)
		t.Cleanup(func() { s.Close() })
		s.SetRetention(Retention{Spend: 3 * day})
		return s
	}
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	chat := BudgetKey{Day: "2026-11-27", Scope: ScopeChat, Subject: "session:webchat:room"}
	all := BudgetKey{Day: "2026-11-27", Scope: ScopeDeployment, Subject: "replyflow"}

	t.Run("spend adds up, a raise adds to the day's budget, the day's notice goes to one turn", func(t *testing.T) {
		s := open(t)
		require.NoError(t, s.AddSpend(ctx, []BudgetKey{chat, all}, 100, 0.5, now))
		require.NoError(t, s.AddSpend(ctx, []BudgetKey{chat, all}, 20, 0.25, now))
		got, err := s.BudgetUsage(ctx, []BudgetKey{chat, all, {Day: "2026-11-28", Scope: ScopeChat, Subject: chat.Subject}})
		require.NoError(t, err)
		assert.Equal(t, int64(120), got[chat].Tokens)
		assert.InDelta(t, 0.75, got[chat].CostUSD, 1e-9)
		assert.Equal(t, int64(120), got[all].Tokens)
		assert.Zero(t, got[BudgetKey{Day: "2026-11-28", Scope: ScopeChat, Subject: chat.Subject}].Tokens, "the next day starts at zero")

		first, err := s.Refused(ctx, chat.Day, chat.Subject, "t1", now)
		require.NoError(t, err)
		again, err := s.Refused(ctx, chat.Day, chat.Subject, "t1", now)
		require.NoError(t, err)
		later, err := s.Refused(ctx, chat.Day, chat.Subject, "t2", now)
		require.NoError(t, err)
		assert.True(t, first, "the first refused turn gets the notice")
		assert.True(t, again, "and again when its attempt is retried")
		assert.False(t, later, "no other turn that day")

		require.NoError(t, s.RaiseBudget(ctx, chat, 1000, 1, now))
		got, err = s.BudgetUsage(ctx, []BudgetKey{chat})
		require.NoError(t, err)
		assert.Equal(t, int64(1000), got[chat].RaisedTokens)
		assert.InDelta(t, 1.0, got[chat].RaisedUSD, 1e-9)
		told, err := s.Refused(ctx, chat.Day, chat.Subject, "t3", now)
		require.NoError(t, err)
		assert.True(t, told, "a raise takes the notice back: a budget spent again is told again")

		rows, err := s.BudgetDay(ctx, chat.Day, 10)
		require.NoError(t, err)
		require.Len(t, rows, 3)
		assert.Equal(t, ScopeSession, rows[0].Scope, "the refused first")
		assert.Equal(t, int64(4), rows[0].Refused)
	})

	t.Run("a raise asked again adds once, and takes the notice back", func(t *testing.T) {
		s := open(t)
		_, err := s.Refused(ctx, chat.Day, chat.Subject, "t1", now)
		require.NoError(t, err)
		raised, err := s.RaiseBudgetOnce(ctx, chat, chat.Subject+"#t2", 500, 0.5, now)
		require.NoError(t, err)
		assert.True(t, raised)
		again, err := s.RaiseBudgetOnce(ctx, chat, chat.Subject+"#t2", 500, 0.5, now)
		require.NoError(t, err)
		assert.False(t, again, "the same raise tried again")
		other, err := s.RaiseBudgetOnce(ctx, chat, chat.Subject+"#t3", 100, 0, now)
		require.NoError(t, err)
		assert.True(t, other, "another raise adds")
		got, err := s.BudgetUsage(ctx, []BudgetKey{chat, {Day: chat.Day, Scope: ScopeRaise, Subject: chat.Subject + "#t2"}})
		require.NoError(t, err)
		assert.Equal(t, int64(600), got[chat].RaisedTokens)
		assert.InDelta(t, 0.5, got[chat].RaisedUSD, 1e-9)
		assert.Equal(t, int64(500), got[BudgetKey{Day: chat.Day, Scope: ScopeRaise, Subject: chat.Subject + "#t2"}].RaisedTokens, "the raise's row records what it added")
		told, err := s.Refused(ctx, chat.Day, chat.Subject, "t4", now)
		require.NoError(t, err)
		assert.True(t, told, "a budget spent again after the raise is told again")
	})

	t.Run("concurrent counts lose nothing", func(t *testing.T) {
		s := open(t)
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					assert.NoError(t, s.AddSpend(ctx, []BudgetKey{chat, all}, 7, 0, now))
				}
			}()
		}
		wg.Wait()
		got, err := s.BudgetUsage(ctx, []BudgetKey{all})
		require.NoError(t, err)
		assert.Equal(t, int64(8*10*7), got[all].Tokens)
	})

	t.Run("a guard keeps its state and writes nothing when unchanged", func(t *testing.T) {
		s := open(t)
		g, err := s.Guard(ctx, "s1")
		require.NoError(t, err)
		assert.Equal(t, Guard{SessionID: "s1"}, g)
		until := now.Add(time.Hour)
		_, err = s.UpdateGuard(ctx, "s1", now, func(g *Guard) bool {
			g.HeartbeatAnswer, g.HeartbeatSame, g.HeartbeatLevel, g.HeartbeatUntil = "abc", 3, 1, until
			g.FailureType, g.FailureTurn, g.Failures = "Format", "t9", 2
			return true
		})
		require.NoError(t, err)
		_, err = s.UpdateGuard(ctx, "s2", now, func(*Guard) bool { return false })
		require.NoError(t, err)
		assert.Equal(t, 1, count(t, s, "spend_guards"), "an unchanged guard is not written")
		g, err = s.Guard(ctx, "s1")
		require.NoError(t, err)
		assert.Equal(t, 3, g.HeartbeatSame)
		assert.True(t, g.HeartbeatUntil.Equal(until))
		assert.True(t, g.CooloffUntil.IsZero())
		assert.Equal(t, "t9", g.FailureTurn)
		in, err := s.Guards(ctx, now, 10)
		require.NoError(t, err)
		require.Len(t, in, 1)
		in, err = s.Guards(ctx, until.Add(time.Second), 10)
		require.NoError(t, err)
		assert.Empty(t, in, "a back-off past its end is not in force")
	})

	t.Run("trips are recorded once and kept as long as the budgets", func(t *testing.T) {
		s := open(t)
		trip := Trip{SessionID: "s1", TurnID: "t1", Kind: "repeat", Detail: "search 4×", At: now}
		require.NoError(t, s.RecordTrip(ctx, trip))
		require.NoError(t, s.RecordTrip(ctx, trip))
		trips, err := s.Trips(ctx, now.Add(-time.Hour), 10)
		require.NoError(t, err)
		require.Len(t, trips, 1)
		assert.Equal(t, "search 4×", trips[0].Detail)
		assert.True(t, trips[0].Until.IsZero())

		later := now.Add(3*day + time.Hour)
		require.NoError(t, s.RecordTrip(ctx, Trip{SessionID: "s2", TurnID: "t1", Kind: "steps", At: later}))
		require.NoError(t, s.AddSpend(ctx, []BudgetKey{{Day: "2026-11-30", Scope: ScopeChat, Subject: "x"}}, 1, 0, now))
		require.NoError(t, s.AddSpend(ctx, []BudgetKey{{Day: "2026-11-30", Scope: ScopeChat, Subject: "y"}}, 1, 0, later))
		assert.Equal(t, 1, count(t, s, "breaker_trips"), "past the retention a trip goes")
		assert.Equal(t, 1, count(t, s, "budget_usage"), "and a budget row last written before it")
	})
}
