package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// A claim code is 48 random bits. Guesses are limited beyond the
// gateway's per-sender rate limit: in any ClaimFailureWindow, a sender
// may fail ClaimFailuresPerSender claims and all senders together
// ClaimFailuresTotal; past either, every claim is refused, the right
// code too, and not checked. An attacker with any number of accounts so
// tries at most ClaimFailuresTotal codes an hour, each with a chance of
// (live codes)/2^48 (about 1 in 9.4e12 for 30 guesses at one live code),
// while the codes live (ClaimTTL). The cost: guesses can keep the rightful
// claimer out for the rest of the hour; REPLYFLOW_OWNERS needs no code.
const (
	ClaimFailureWindow     = time.Hour
	ClaimFailuresPerSender = 5
	ClaimFailuresTotal     = 30
)

// claimLock is the PostgreSQL advisory lock key that serializes claims
// ("replyclm" in ASCII), so that a code is spent once and the failure
// counts are exact when several workers claim at once. SQLite's
// transactions begin IMMEDIATE and are serial already.
const claimLock int64 = 0x7265706c79636c6d

// NewClaimCode stores and returns a one-time code, valid for ttl: the
// first sender who sends it in time becomes an owner. It also deletes the
// expired unused codes, so the table holds the codes of the starts of the
// last ttl and the spent ones.
func (s *Store) NewClaimCode(ctx context.Context, ttl time.Duration) (string, error) {
	if ttl <= 0 {
		return "", fmt.Errorf("make a claim code: its lifetime must be positive, not %s (REPLYFLOW_CLAIM_TTL)", ttl)
	}
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	code := "claim-" + hex.EncodeToString(b)
	now := time.Now().UTC()
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM claim_codes WHERE used_by = '' AND (expires_at IS NULL OR expires_at < ?)`), now); err != nil {
		return "", fmt.Errorf("delete the expired claim codes: %w", err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO claim_codes (code, created_at, expires_at) VALUES (?, ?, ?)`), code, now, now.Add(ttl)); err != nil {
		return "", fmt.Errorf("store a claim code: %w", err)
	}
	return code, nil
}

// RevokeClaimCodes deletes every unused claim code: a worker starting
// with owners configured calls it, so that no code printed by an earlier
// start without owners claims anything.
func (s *Store) RevokeClaimCodes(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `DELETE FROM claim_codes WHERE used_by = ''`); err != nil {
		return fmt.Errorf("revoke the unused claim codes: %w", err)
	}
	return nil
}

// BurnClaimCode makes an unused code worthless without making anyone an
// owner: it was seen where it should not have been. An unknown or spent
// code is left as it is.
func (s *Store) BurnClaimCode(ctx context.Context, code string) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM claim_codes WHERE code = ? AND used_by = ''`), code); err != nil {
		return fmt.Errorf("burn a claim code: %w", err)
	}
	return nil
}

// Claim spends code for who, who becomes an owner. It is true when the
// code was unused and unexpired, or already spent by who (a repeated
// activity); false for an unknown, expired or spent code, once the agent
// has an owner, and for a sender or a store out of guesses (see
// ClaimFailuresPerSender).
func (s *Store) Claim(ctx context.Context, code, who string) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	if s.postgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, claimLock); err != nil {
			return false, fmt.Errorf("wait for the claim lock: %w", err)
		}
	}
	now := time.Now().UTC()
	var usedBy string
	var expiresAt sql.NullTime
	err = tx.QueryRowContext(ctx, s.q(`SELECT used_by, expires_at FROM claim_codes WHERE code = ?`), code).Scan(&usedBy, &expiresAt)
	found := err == nil
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, fmt.Errorf("read claim code: %w", err)
	}
	if found && usedBy != "" && usedBy == who {
		return true, nil
	}
	allowed, err := s.claimAllowed(ctx, tx, who, now)
	if err != nil || !allowed {
		return false, err
	}
	valid := found && usedBy == "" && expiresAt.Valid && now.Before(expiresAt.Time)
	if valid {
		// Codes claim an agent that has no owner: once one is claimed,
		// codes printed earlier are worthless.
		var owners int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM owners`).Scan(&owners); err != nil {
			return false, fmt.Errorf("count owners: %w", err)
		}
		valid = owners == 0
	}
	if !valid {
		if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO claim_failures (who, failed_at) VALUES (?, ?)`), who, now); err != nil {
			return false, fmt.Errorf("record a failed claim by %s: %w", who, err)
		}
		return false, tx.Commit()
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE claim_codes SET used_by = ? WHERE code = ?`), who, code); err != nil {
		return false, fmt.Errorf("spend claim code: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO owners (who, claimed_at) VALUES (?, ?) ON CONFLICT (who) DO NOTHING`), who, now); err != nil {
		return false, fmt.Errorf("record owner %s: %w", who, err)
	}
	// The other codes claim nothing from now on: they go.
	if _, err := tx.ExecContext(ctx, `DELETE FROM claim_codes WHERE used_by = ''`); err != nil {
		return false, fmt.Errorf("delete the unused claim codes: %w", err)
	}
	return true, tx.Commit()
}

// claimAllowed prunes the failures older than ClaimFailureWindow and is
// true while who, and all senders together, have guesses left.
func (s *Store) claimAllowed(ctx context.Context, tx *sql.Tx, who string, now time.Time) (bool, error) {
	if _, err := tx.ExecContext(ctx, s.q(`DELETE FROM claim_failures WHERE failed_at < ?`), now.Add(-ClaimFailureWindow)); err != nil {
		return false, fmt.Errorf("prune the failed claims: %w", err)
	}
	var mine, all int
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COUNT(CASE WHEN who = ? THEN 1 END), COUNT(*) FROM claim_failures`), who).Scan(&mine, &all); err != nil {
		return false, fmt.Errorf("count the failed claims: %w", err)
	}
	return mine < ClaimFailuresPerSender && all < ClaimFailuresTotal, nil
}

// Owners lists who claimed the agent.
func (s *Store) Owners(ctx context.Context) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT who FROM owners ORDER BY claimed_at, who`)
	if err != nil {
		return nil, fmt.Errorf("read owners: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var who string
		if err := rows.Scan(&who); err != nil {
			return nil, err
		}
		out = append(out, who)
	}
	return out, rows.Err()
}
