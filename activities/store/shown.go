package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SaveShown records what a turn's streamed answer shows now (a JSON
// pipeline.Shown), replacing what was recorded before. Rows older than
// the tool results' retention are deleted on the way.
func (s *Store) SaveShown(ctx context.Context, sessionID, turnID, shownJSON string) error {
	now := time.Now().UTC()
	if err := s.prune(ctx, s.db, "stream_shown", "session_id, turn_id", "updated_at", now.Add(-s.retention.ToolResults)); err != nil {
		return fmt.Errorf("record what turn %s of %s showed: %w", turnID, sessionID, err)
	}
	if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO stream_shown (session_id, turn_id, shown, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (session_id, turn_id) DO UPDATE SET shown = excluded.shown, updated_at = excluded.updated_at`),
		sessionID, turnID, shownJSON, now); err != nil {
		return fmt.Errorf("record what turn %s of %s showed: %w", turnID, sessionID, err)
	}
	return nil
}

// Shown is what SaveShown recorded for a turn, "" when nothing was.
func (s *Store) Shown(ctx context.Context, sessionID, turnID string) (string, error) {
	var shown string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT shown FROM stream_shown WHERE session_id = ? AND turn_id = ?`), sessionID, turnID).Scan(&shown)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read what turn %s of %s showed: %w", turnID, sessionID, err)
	}
	return shown, nil
}
