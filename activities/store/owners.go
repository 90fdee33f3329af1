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

// NewClaimCode stores and returns a one-time code: the first sender who
// sends it becomes an owner.
func (s *Store) NewClaimCode(ctx context.Context) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	code := "claim-" + hex.EncodeToString(b)
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO claim_codes (code, created_at) VALUES (?, ?)`), code, time.Now().UTC()); err != nil {
		return "", fmt.Errorf("store a claim code: %w", err)
	}
	return code, nil
}

// Claim spends code for who, who becomes an owner. It is true when the
// code was unused or already spent by who (a repeated activity); false for
// an unknown code or one another sender used.
func (s *Store) Claim(ctx context.Context, code, who string) (bool, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	var usedBy string
	err = tx.QueryRowContext(ctx, s.q(`SELECT used_by FROM claim_codes WHERE code = ?`), code).Scan(&usedBy)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read claim code: %w", err)
	}
	if usedBy != "" {
		return usedBy == who, nil
	}
	// Codes claim an agent that has no owner: once one is claimed, codes
	// printed earlier are worthless.
	var owners int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM owners`).Scan(&owners); err != nil {
		return false, fmt.Errorf("count owners: %w", err)
	}
	if owners > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE claim_codes SET used_by = ? WHERE code = ?`), who, code); err != nil {
		return false, fmt.Errorf("spend claim code: %w", err)
	}
	if _, err := tx.ExecContext(ctx, s.q(`INSERT INTO owners (who, claimed_at) VALUES (?, ?) ON CONFLICT (who) DO NOTHING`), who, time.Now().UTC()); err != nil {
		return false, fmt.Errorf("record owner %s: %w", who, err)
	}
	// The other codes claim nothing from now on: they go.
	if _, err := tx.ExecContext(ctx, `DELETE FROM claim_codes WHERE used_by = ''`); err != nil {
		return false, fmt.Errorf("delete the unused claim codes: %w", err)
	}
	return true, tx.Commit()
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
