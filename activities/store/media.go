package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/replyflow/replyflow/pipeline"
)

// StoredMedia is one file of a user's message (table inbound_media): the
// platform's reference as the gateway recorded it, and what a turn made
// of it once downloaded.
type StoredMedia struct {
	MessageID string
	Seq       int
	pipeline.Media
	// Content is an image's bytes, base64-encoded; Transcript is a voice
	// note's or an audio file's text. Both are empty until a turn saved
	// them (SaveMediaContent).
	Content    string
	Transcript string
}

// maxMediaLookup bounds the messages one MessageMedia call reads: a
// turn's batch is bounded by the session's queue cap, far below it.
const maxMediaLookup = 200

// RecordMedia records the media references of message messageID of a
// session, idempotent on (session, message, position): a message the
// platform redelivers records nothing new. It prunes rows older than
// Retention.ToolResults first.
func (s *Store) RecordMedia(ctx context.Context, sessionID, messageID string, media []pipeline.Media) error {
	if len(media) == 0 {
		return nil
	}
	if len(media) > pipeline.MaxMedia {
		return fmt.Errorf("message %s of %s has %d files, the limit is %d", messageID, sessionID, len(media), pipeline.MaxMedia)
	}
	now := time.Now().UTC()
	if err := s.prune(ctx, s.db, "inbound_media", "session_id, message_id, seq", "created_at", now.Add(-s.retention.ToolResults)); err != nil {
		return err
	}
	for i, m := range media {
		if _, err := s.db.ExecContext(ctx, s.q(`INSERT INTO inbound_media (session_id, message_id, seq, kind, ref, mime_type, name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, message_id, seq) DO NOTHING`),
			sessionID, messageID, i, m.Kind, m.Ref, m.MimeType, m.Name, now); err != nil {
			return fmt.Errorf("record file %d of message %s of %s: %w", i, messageID, sessionID, err)
		}
	}
	return nil
}

// MessageMedia returns the recorded files of a session's messages, by
// message ID, each message's in order.
func (s *Store) MessageMedia(ctx context.Context, sessionID string, messageIDs []string) (map[string][]StoredMedia, error) {
	out := map[string][]StoredMedia{}
	if len(messageIDs) == 0 {
		return out, nil
	}
	if len(messageIDs) > maxMediaLookup {
		messageIDs = messageIDs[len(messageIDs)-maxMediaLookup:]
	}
	args := []any{sessionID}
	for _, id := range messageIDs {
		args = append(args, id)
	}
	query := `SELECT message_id, seq, kind, ref, mime_type, name, content, transcript FROM inbound_media WHERE session_id = ? AND message_id IN (?` +
		strings.Repeat(", ?", len(messageIDs)-1) + `) ORDER BY message_id, seq`
	rows, err := s.db.QueryContext(ctx, s.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("read the files of %s: %w", sessionID, err)
	}
	defer rows.Close()
	for rows.Next() {
		var m StoredMedia
		if err := rows.Scan(&m.MessageID, &m.Seq, &m.Kind, &m.Ref, &m.MimeType, &m.Name, &m.Content, &m.Transcript); err != nil {
			return nil, fmt.Errorf("read the files of %s: %w", sessionID, err)
		}
		out[m.MessageID] = append(out[m.MessageID], m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the files of %s: %w", sessionID, err)
	}
	return out, nil
}

// SaveMediaContent keeps what a turn made of a file: its bytes
// (base64) or its transcript, so a later attempt or step of the turn
// neither downloads nor transcribes it again.
func (s *Store) SaveMediaContent(ctx context.Context, sessionID, messageID string, seq int, content, transcript string) error {
	if _, err := s.db.ExecContext(ctx, s.q(`UPDATE inbound_media SET content = ?, transcript = ? WHERE session_id = ? AND message_id = ? AND seq = ?`),
		content, transcript, sessionID, messageID, seq); err != nil {
		return fmt.Errorf("save file %d of message %s of %s: %w", seq, messageID, sessionID, err)
	}
	return nil
}
