package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/replyflow/replyflow/adapters"
)

// The web chat's log (table chat_log) is bounded per chat: its newest
// ChatLogMessages messages, and of those only the newest that fit in
// ChatLogBytes of data (a file travels in its message, so a few files
// fill a chat's share). A message not written for Retention.ChatLog is
// deleted. The page shows what is kept; what is trimmed is gone from the
// page, not from the model's transcript.
const (
	ChatLogMessages = 200
	ChatLogBytes    = 2 << 20
)

var _ adapters.ChatLog = (*Store)(nil)

// AddChatMessage records a web chat message, idempotent on m.Key (see
// adapters.ChatLog), and trims the chat to its bounds.
func (s *Store) AddChatMessage(ctx context.Context, m adapters.ChatLogMessage) (string, bool, error) {
	id, fresh, err := s.addChatMessage(ctx, m)
	if err != nil {
		return "", false, fmt.Errorf("record web chat message %s of chat %s: %w", m.ID, m.Chat, err)
	}
	return id, fresh, nil
}

func (s *Store) addChatMessage(ctx context.Context, m adapters.ChatLogMessage) (string, bool, error) {
	now := time.Now().UTC()
	if err := s.prune(ctx, s.db, "chat_log", "chat, message_id", "updated_at", now.Add(-s.retention.ChatLog)); err != nil {
		return "", false, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", false, err
	}
	defer func() { _ = tx.Rollback() }()
	if id, ok, err := chatKey(ctx, tx, s.q(`SELECT message_id FROM chat_log WHERE chat = ? AND send_key = ?`), m.Chat, m.Key); err != nil || ok {
		return id, false, err
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, s.q(`SELECT COALESCE(MAX(seq), 0) FROM chat_log WHERE chat = ?`), m.Chat).Scan(&seq); err != nil {
		return "", false, err
	}
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO chat_log (chat, message_id, send_key, seq, kind, data, reaction, bytes, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
		m.Chat, m.ID, m.Key, seq+1, m.Kind, string(m.Data), m.Reaction, len(m.Data), now, now)
	if err != nil {
		return "", false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		// Another gateway recorded the same key (or ID) first, between
		// the look-up and the insert (PostgreSQL; SQLite's transaction
		// holds the write lock throughout).
		if err := tx.Rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) {
			return "", false, err
		}
		id, ok, err := chatKey(ctx, s.db, s.q(`SELECT message_id FROM chat_log WHERE chat = ? AND (send_key = ? OR message_id = ?)`), m.Chat, m.Key, m.ID)
		if err == nil && !ok {
			err = errors.New("the message was neither recorded nor found")
		}
		return id, false, err
	}
	if err := s.trimChat(ctx, tx, m.Chat); err != nil {
		return "", false, err
	}
	return m.ID, true, tx.Commit()
}

// chatKey runs a query for one message ID.
func chatKey(ctx context.Context, db interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, query string, args ...any) (string, bool, error) {
	var id string
	err := db.QueryRowContext(ctx, query, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// EditChatMessage replaces a recorded message's data (an edit) and trims
// the chat to its bounds, as an edit may have made it longer.
func (s *Store) EditChatMessage(ctx context.Context, chat, id string, data []byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err == nil {
		defer func() { _ = tx.Rollback() }()
		_, err = tx.ExecContext(ctx, s.q(`UPDATE chat_log SET data = ?, bytes = ?, updated_at = ? WHERE chat = ? AND message_id = ?`),
			string(data), len(data), time.Now().UTC(), chat, id)
	}
	if err == nil {
		err = s.trimChat(ctx, tx, chat)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		return fmt.Errorf("record the edit of web chat message %s of chat %s: %w", id, chat, err)
	}
	return nil
}

// SetChatReaction records the reaction a web chat message shows ("" for
// none).
func (s *Store) SetChatReaction(ctx context.Context, chat, id, emoji string) error {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE chat_log SET reaction = ?, updated_at = ? WHERE chat = ? AND message_id = ?`),
		emoji, time.Now().UTC(), chat, id); err != nil {
		return fmt.Errorf("record the reaction on web chat message %s of chat %s: %w", id, chat, err)
	}
	return nil
}

// ChatMessages returns a web chat's recorded messages, oldest first: at
// most ChatLogMessages, within ChatLogBytes of data.
func (s *Store) ChatMessages(ctx context.Context, chat string) ([]adapters.ChatLogMessage, error) {
	rows, err := s.db.QueryContext(ctx, s.q(fmt.Sprintf(`SELECT message_id, kind, data, reaction FROM chat_log WHERE chat = ? AND updated_at >= ? ORDER BY seq, created_at, message_id LIMIT %d`, ChatLogMessages)),
		chat, time.Now().Add(-s.retention.ChatLog).UTC())
	if err != nil {
		return nil, fmt.Errorf("read the web chat log of chat %s: %w", chat, err)
	}
	defer rows.Close()
	var out []adapters.ChatLogMessage
	for rows.Next() {
		m := adapters.ChatLogMessage{Chat: chat}
		var data string
		if err := rows.Scan(&m.ID, &m.Kind, &data, &m.Reaction); err != nil {
			return nil, fmt.Errorf("read the web chat log of chat %s: %w", chat, err)
		}
		m.Data = []byte(data)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the web chat log of chat %s: %w", chat, err)
	}
	return out, nil
}

// ChatMessage returns a web chat's recorded message by its ID, as long
// as the chat keeps it (its bounds and retention).
func (s *Store) ChatMessage(ctx context.Context, chat, id string) (adapters.ChatLogMessage, bool, error) {
	m := adapters.ChatLogMessage{Chat: chat, ID: id}
	var data string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT kind, data, reaction FROM chat_log WHERE chat = ? AND message_id = ?`), chat, id).
		Scan(&m.Kind, &data, &m.Reaction)
	if errors.Is(err, sql.ErrNoRows) {
		return adapters.ChatLogMessage{}, false, nil
	}
	if err != nil {
		return adapters.ChatLogMessage{}, false, fmt.Errorf("read web chat message %s of chat %s: %w", id, chat, err)
	}
	m.Data = []byte(data)
	return m, true, nil
}

// trimChat deletes a chat's messages beyond its newest ChatLogMessages,
// and the older ones beyond ChatLogBytes of data. The newest message is
// always kept: no message is larger than the bound.
func (s *Store) trimChat(ctx context.Context, db execer, chat string) error {
	query := fmt.Sprintf(`DELETE FROM chat_log WHERE chat = ? AND message_id IN (
	SELECT message_id FROM (
		SELECT message_id,
			ROW_NUMBER() OVER (ORDER BY seq DESC, created_at DESC, message_id DESC) AS n,
			SUM(bytes) OVER (ORDER BY seq DESC, created_at DESC, message_id DESC ROWS UNBOUNDED PRECEDING) AS total
		FROM chat_log WHERE chat = ?
	) ranked WHERE n > %d OR (n > 1 AND total > %d))`, ChatLogMessages, ChatLogBytes)
	if _, err := db.ExecContext(ctx, s.q(query), chat, chat); err != nil {
		return fmt.Errorf("trim the web chat log of chat %s: %w", chat, err)
	}
	return nil
}
