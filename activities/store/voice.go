package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// VoiceReplies is whether the chat's replies are also spoken (/voice),
// and set: whether anyone switched them (false: the chat follows the
// default). chatID is the chat's session ID without a sender.
func (s *Store) VoiceReplies(ctx context.Context, chatID string) (on, set bool, err error) {
	err = s.db.QueryRowContext(ctx, s.q(`SELECT spoken FROM voice_replies WHERE chat_id = ?`), chatID).Scan(&on)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, false, nil
	case err != nil:
		return false, false, fmt.Errorf("read whether the replies of %s are spoken: %w", chatID, err)
	}
	return on, true, nil
}

// SetVoiceReplies switches the chat's voice replies on or off; who is
// who did (channel:sender). One row per chat: a switch replaces the last.
func (s *Store) SetVoiceReplies(ctx context.Context, chatID string, on bool, who string, now time.Time) error {
	_, err := s.db.ExecContext(ctx, s.q(`INSERT INTO voice_replies (chat_id, spoken, updated_by, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT (chat_id) DO UPDATE SET spoken = excluded.spoken, updated_by = excluded.updated_by, updated_at = excluded.updated_at`),
		chatID, on, who, now.UTC())
	if err != nil {
		return fmt.Errorf("switch the voice replies of %s: %w", chatID, err)
	}
	return nil
}
