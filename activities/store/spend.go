package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The scopes of a budget row: a chat (its workflow ID without a sender),
// a sender ("<channel>:<sender ID>"), the deployment (its task queue),
// a session, whose row counts its refused turns and holds the day's
// notice, and a raise an owner asked in a chat ("<session ID>#<turn
// ID>"), whose row holds what it added, so that the turn's retries add
// nothing more. Raise rows are one per owner's raise, kept as long as the
// others.
const (
	ScopeChat       = "chat"
	ScopeSender     = "sender"
	ScopeDeployment = "deployment"
	ScopeSession    = "session"
	ScopeRaise      = "raise"
)

// BudgetKey names one budget-day row.
type BudgetKey struct {
	Day     string // the budget-day, "2006-01-02" in the budget's time zone
	Scope   string
	Subject string
}

// BudgetUsage is what one subject spent in one budget-day, and what an
// owner added to its budget for that day.
type BudgetUsage struct {
	BudgetKey
	Tokens       int64
	CostUSD      float64
	RaisedTokens int64
	RaisedUSD    float64
	Refused      int64
	NoticeTurn   string
	UpdatedAt    time.Time
}

// BudgetUsage reads the rows of keys; a key without a row spent nothing.
func (s *Store) BudgetUsage(ctx context.Context, keys []BudgetKey) (map[BudgetKey]BudgetUsage, error) {
	out := make(map[BudgetKey]BudgetUsage, len(keys))
	for _, k := range keys {
		u := BudgetUsage{BudgetKey: k}
		err := s.db.QueryRowContext(ctx, s.q(`SELECT tokens, cost_usd, raised_tokens, raised_usd, refused, notice_turn, updated_at FROM budget_usage WHERE day = ? AND scope = ? AND subject = ?`), k.Day, k.Scope, k.Subject).
			Scan(&u.Tokens, &u.CostUSD, &u.RaisedTokens, &u.RaisedUSD, &u.Refused, &u.NoticeTurn, &u.UpdatedAt)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("read the budget of %s %s on %s: %w", k.Scope, k.Subject, k.Day, err)
		}
		out[k] = u
	}
	return out, nil
}

// AddSpend adds what one model call spent to each key's row, each in one
// atomic statement (an upsert that adds to the stored value), so that
// workers counting at once lose nothing. Rows past Retention.Spend are
// deleted on the way.
func (s *Store) AddSpend(ctx context.Context, keys []BudgetKey, tokens int64, costUSD float64, now time.Time) error {
	if err := s.prune(ctx, s.db, "budget_usage", "day, scope, subject", "updated_at", now.Add(-s.retention.Spend)); err != nil {
		return err
	}
	for _, k := range keys {
		_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO budget_usage (day, scope, subject, tokens, cost_usd, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (day, scope, subject) DO UPDATE SET tokens = budget_usage.tokens + excluded.tokens, cost_usd = budget_usage.cost_usd + excluded.cost_usd, updated_at = excluded.updated_at`),
			k.Day, k.Scope, k.Subject, tokens, costUSD, now.UTC())
		if err != nil {
			return fmt.Errorf("count %d tokens against the budget of %s %s on %s: %w", tokens, k.Scope, k.Subject, k.Day, err)
		}
	}
	return nil
}

// RaiseBudget adds tokens and money to a subject's budget for one day.
// The notices given that day are taken back (all of them for a sender or
// the deployment, whose sessions the store cannot name; the chat's own
// sessions for a chat), so that a budget spent again is told again.
func (s *Store) RaiseBudget(ctx context.Context, k BudgetKey, tokens int64, usd float64, now time.Time) error {
	return s.raiseBudget(ctx, s.db, k, tokens, usd, now)
}

// RaiseBudgetOnce is RaiseBudget for a raise asked once and maybe tried
// again (an activity's retry): raise names it, and only its first call
// adds, in one transaction with a row (scope ScopeRaise, subject raise)
// that records what it added. It is true when this call added.
func (s *Store) RaiseBudgetOnce(ctx context.Context, k BudgetKey, raise string, tokens int64, usd float64, now time.Time) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("raise the budget of %s %s on %s: %w", k.Scope, k.Subject, k.Day, err)
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO budget_usage (day, scope, subject, raised_tokens, raised_usd, updated_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (day, scope, subject) DO NOTHING`),
		k.Day, ScopeRaise, raise, tokens, usd, now.UTC())
	if err != nil {
		return false, fmt.Errorf("record the raise %s of %s %s on %s: %w", raise, k.Scope, k.Subject, k.Day, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err // raised before: its retry adds nothing
	}
	if err := s.raiseBudget(ctx, tx, k, tokens, usd, now); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("raise the budget of %s %s on %s: %w", k.Scope, k.Subject, k.Day, err)
	}
	return true, nil
}

func (s *Store) raiseBudget(ctx context.Context, db execer, k BudgetKey, tokens int64, usd float64, now time.Time) error {
	_, err := db.ExecContext(ctx, s.q(`INSERT INTO budget_usage (day, scope, subject, raised_tokens, raised_usd, updated_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (day, scope, subject) DO UPDATE SET raised_tokens = budget_usage.raised_tokens + excluded.raised_tokens, raised_usd = budget_usage.raised_usd + excluded.raised_usd, updated_at = excluded.updated_at`),
		k.Day, k.Scope, k.Subject, tokens, usd, now.UTC())
	if err != nil {
		return fmt.Errorf("raise the budget of %s %s on %s: %w", k.Scope, k.Subject, k.Day, err)
	}
	query, args := `UPDATE budget_usage SET notice_turn = '' WHERE day = ? AND scope = ?`, []any{k.Day, ScopeSession}
	if k.Scope == ScopeChat {
		query += ` AND (subject = ? OR subject LIKE ?)`
		args = append(args, k.Subject, k.Subject+":~%")
	}
	if _, err := db.ExecContext(ctx, s.q(query), args...); err != nil {
		return fmt.Errorf("take back the notices of %s %s on %s: %w", k.Scope, k.Subject, k.Day, err)
	}
	return nil
}

// Refused counts a turn of sessionID refused on day, and is true for the
// turn that gets the day's one notice: the first refused, and that same
// turn again when its attempt is retried.
func (s *Store) Refused(ctx context.Context, day, sessionID, turnID string, now time.Time) (bool, error) {
	var noticed string
	err := s.db.QueryRowContext(ctx, s.q(`INSERT INTO budget_usage (day, scope, subject, refused, notice_turn, updated_at) VALUES (?, ?, ?, 1, ?, ?)
ON CONFLICT (day, scope, subject) DO UPDATE SET refused = budget_usage.refused + 1, updated_at = excluded.updated_at,
  notice_turn = CASE WHEN budget_usage.notice_turn = '' THEN excluded.notice_turn ELSE budget_usage.notice_turn END
RETURNING notice_turn`), day, ScopeSession, sessionID, turnID, now.UTC()).Scan(&noticed)
	if err != nil {
		return false, fmt.Errorf("count a refused turn of %s on %s: %w", sessionID, day, err)
	}
	return noticed == turnID, nil
}

// BudgetDay lists the rows of a budget-day, the largest spenders first,
// at most limit of them.
func (s *Store) BudgetDay(ctx context.Context, day string, limit int) ([]BudgetUsage, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT scope, subject, tokens, cost_usd, raised_tokens, raised_usd, refused, notice_turn, updated_at FROM budget_usage WHERE day = ? ORDER BY refused DESC, tokens DESC, scope, subject LIMIT ?`), day, limit)
	if err != nil {
		return nil, fmt.Errorf("read the budgets of %s: %w", day, err)
	}
	defer rows.Close()
	var out []BudgetUsage
	for rows.Next() {
		u := BudgetUsage{BudgetKey: BudgetKey{Day: day}}
		if err := rows.Scan(&u.Scope, &u.Subject, &u.Tokens, &u.CostUSD, &u.RaisedTokens, &u.RaisedUSD, &u.Refused, &u.NoticeTurn, &u.UpdatedAt); err != nil {
			return nil, fmt.Errorf("read the budgets of %s: %w", day, err)
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// Guard is what the breakers remember of one session.
type Guard struct {
	SessionID string
	// HeartbeatAnswer is a hash of the last heartbeat answer,
	// HeartbeatSame how many heartbeats in a row gave it; HeartbeatLevel
	// doubles the back-off at each trip, which lasts until HeartbeatUntil.
	HeartbeatAnswer string
	HeartbeatSame   int
	HeartbeatLevel  int
	HeartbeatUntil  time.Time
	// FailureType is the last model failure's type, FailureTurn its turn,
	// Failures how many turns in a row failed that way; the cool-off lasts
	// until CooloffUntil, and CooloffNoticeTurn is the turn told of it.
	FailureType       string
	FailureTurn       string
	Failures          int
	CooloffUntil      time.Time
	CooloffNoticeTurn string
}

// Guard reads a session's breaker state (zero when it has none).
func (s *Store) Guard(ctx context.Context, sessionID string) (Guard, error) {
	g, err := s.readGuard(ctx, s.db, sessionID, false)
	if err != nil {
		return Guard{}, fmt.Errorf("read the breakers of %s: %w", sessionID, err)
	}
	return g, nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

func (s *Store) readGuard(ctx context.Context, db querier, sessionID string, lock bool) (Guard, error) {
	g := Guard{SessionID: sessionID}
	query := `SELECT heartbeat_answer, heartbeat_same, heartbeat_level, heartbeat_until, failure_type, failure_turn, failures, cooloff_until, cooloff_notice_turn FROM spend_guards WHERE session_id = ?`
	if lock && s.postgres {
		query += ` FOR UPDATE`
	}
	var hbUntil, coolUntil sql.NullTime
	err := db.QueryRowContext(ctx, s.q(query), sessionID).Scan(&g.HeartbeatAnswer, &g.HeartbeatSame, &g.HeartbeatLevel, &hbUntil, &g.FailureType, &g.FailureTurn, &g.Failures, &coolUntil, &g.CooloffNoticeTurn)
	if errors.Is(err, sql.ErrNoRows) {
		return g, nil
	}
	g.HeartbeatUntil, g.CooloffUntil = hbUntil.Time, coolUntil.Time
	return g, err
}

// UpdateGuard changes a session's breaker state with change, in one
// transaction that holds the session's row: two attempts of one session
// at once (a retry beside a lost worker's) see each other's change. A
// change that returns false writes nothing. Rows past Retention.Spend are
// deleted on the way.
func (s *Store) UpdateGuard(ctx context.Context, sessionID string, now time.Time, change func(*Guard) bool) (Guard, error) {
	g, err := s.updateGuard(ctx, sessionID, now, change)
	if err != nil {
		return Guard{}, fmt.Errorf("update the breakers of %s: %w", sessionID, err)
	}
	return g, nil
}

func (s *Store) updateGuard(ctx context.Context, sessionID string, now time.Time, change func(*Guard) bool) (Guard, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return Guard{}, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO spend_guards (session_id, updated_at) VALUES (?, ?) ON CONFLICT (session_id) DO NOTHING`), sessionID, now.UTC()); err != nil {
		return Guard{}, err
	}
	g, err := s.readGuard(ctx, tx, sessionID, true)
	if err != nil {
		return Guard{}, err
	}
	if !change(&g) {
		return g, nil // rolled back: a row just made for nothing goes too
	}
	_, err = tx.ExecContext(ctx, s.q(`UPDATE spend_guards SET heartbeat_answer = ?, heartbeat_same = ?, heartbeat_level = ?, heartbeat_until = ?, failure_type = ?, failure_turn = ?, failures = ?, cooloff_until = ?, cooloff_notice_turn = ?, updated_at = ? WHERE session_id = ?`),
		g.HeartbeatAnswer, g.HeartbeatSame, g.HeartbeatLevel, nullTime(g.HeartbeatUntil), g.FailureType, g.FailureTurn, g.Failures, nullTime(g.CooloffUntil), g.CooloffNoticeTurn, now.UTC(), sessionID)
	if err != nil {
		return Guard{}, err
	}
	if err := s.prune(ctx, tx, "spend_guards", "session_id", "updated_at", now.Add(-s.retention.Spend)); err != nil {
		return Guard{}, err
	}
	return g, tx.Commit()
}

func nullTime(t time.Time) sql.NullTime {
	if t.IsZero() {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: t.UTC(), Valid: true}
}

// Guards lists the sessions whose heartbeat backs off or whose model
// calls cool off at now, at most limit of them.
func (s *Store) Guards(ctx context.Context, now time.Time, limit int) ([]Guard, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT session_id FROM spend_guards WHERE heartbeat_until > ? OR cooloff_until > ? ORDER BY session_id LIMIT ?`), now.UTC(), now.UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("read the breakers in force: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read the breakers in force: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the breakers in force: %w", err)
	}
	out := make([]Guard, 0, len(ids))
	for _, id := range ids {
		g, err := s.Guard(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, nil
}

// Trip is one breaker's trip in one session's turn.
type Trip struct {
	SessionID string
	TurnID    string
	Kind      string
	Detail    string
	Until     time.Time // when it stops holding; zero for a stopped turn
	At        time.Time
}

// RecordTrip records a trip once per session, turn and kind. Trips past
// Retention.Spend are deleted on the way.
func (s *Store) RecordTrip(ctx context.Context, t Trip) error {
	if err := s.prune(ctx, s.db, "breaker_trips", "session_id, turn_id, kind", "tripped_at", t.At.Add(-s.retention.Spend)); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO breaker_trips (session_id, turn_id, kind, detail, until_at, tripped_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, turn_id, kind) DO NOTHING`),
		t.SessionID, t.TurnID, t.Kind, t.Detail, nullTime(t.Until), t.At.UTC())
	if err != nil {
		return fmt.Errorf("record the %s trip of %s: %w", t.Kind, t.SessionID, err)
	}
	return nil
}

// Trips lists the trips since a time, the newest first, at most limit.
func (s *Store) Trips(ctx context.Context, since time.Time, limit int) ([]Trip, error) {
	rows, err := s.db.QueryContext(ctx, s.q(`SELECT session_id, turn_id, kind, detail, until_at, tripped_at FROM breaker_trips WHERE tripped_at >= ? ORDER BY tripped_at DESC, session_id LIMIT ?`), since.UTC(), limit)
	if err != nil {
		return nil, fmt.Errorf("read the breaker trips: %w", err)
	}
	defer rows.Close()
	var out []Trip
	for rows.Next() {
		var t Trip
		var until sql.NullTime
		if err := rows.Scan(&t.SessionID, &t.TurnID, &t.Kind, &t.Detail, &until, &t.At); err != nil {
			return nil, fmt.Errorf("read the breaker trips: %w", err)
		}
		t.Until = until.Time
		out = append(out, t)
	}
	return out, rows.Err()
}
