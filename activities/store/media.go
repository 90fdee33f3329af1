package store

import (
	"context"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/replyflow/replyflow/adapters"
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

// Sealer encrypts what the store keeps of users' files (their bytes and
// transcripts) at rest; codec.Blobs, with the codec's keys, is the real
// one. where names the row and column a value is kept in: a value opens
// only there.
type Sealer interface {
	Seal(plain []byte, where string) (string, error)
	Open(stored, where string) ([]byte, error)
}

// sealedPrefix starts a sealed value (codec.BlobPrefix; a test keeps the
// two the same): without a Sealer, such a value is not read.
const sealedPrefix = "rfenc1:"

// SetSealer makes the store encrypt the files' bytes and transcripts it
// keeps from now on (REPLYFLOW_CODEC_KEYS); values kept in clear before
// stay readable. Call it before the store is used.
func (s *Store) SetSealer(sealer Sealer) { s.sealer = sealer }

// mediaPlace is where a file's value is kept, what it is sealed for.
func mediaPlace(sessionID, messageID string, seq int, column string) string {
	return fmt.Sprintf("inbound_media\x00%s\x00%s\x00%d\x00%s", sessionID, messageID, seq, column)
}

// sealMedia is what is written of a file's content (base64) and
// transcript: sealed when the store has a Sealer. The content is sealed
// as its bytes, not their base64, and kept as the sealed text.
func (s *Store) sealMedia(sessionID, messageID string, seq int, content, transcript string) (string, string, error) {
	if s.sealer == nil {
		return content, transcript, nil
	}
	var err error
	if content != "" {
		data, derr := base64.StdEncoding.DecodeString(content)
		if derr != nil {
			return "", "", fmt.Errorf("the content is not base64: %w", derr)
		}
		if content, err = s.sealer.Seal(data, mediaPlace(sessionID, messageID, seq, "content")); err != nil {
			return "", "", err
		}
	}
	if transcript != "" {
		if transcript, err = s.sealer.Seal([]byte(transcript), mediaPlace(sessionID, messageID, seq, "transcript")); err != nil {
			return "", "", err
		}
	}
	return content, transcript, nil
}

// openMedia reads a row's sealed content and transcript back in place.
func (s *Store) openMedia(sessionID string, m *StoredMedia) error {
	for _, f := range []struct {
		column string
		value  *string
		binary bool
	}{{"content", &m.Content, true}, {"transcript", &m.Transcript, false}} {
		if !strings.HasPrefix(*f.value, sealedPrefix) {
			continue // empty, or kept before encryption was on
		}
		if s.sealer == nil {
			return fmt.Errorf("decrypt the %s of file %d of message %s of session %s: %w", f.column, m.Seq, m.MessageID, sessionID, errNoSealer)
		}
		plain, err := s.sealer.Open(*f.value, mediaPlace(sessionID, m.MessageID, m.Seq, f.column))
		if err != nil {
			return fmt.Errorf("decrypt the %s of file %d of message %s of session %s: %w", f.column, m.Seq, m.MessageID, sessionID, err)
		}
		if f.binary {
			*f.value = base64.StdEncoding.EncodeToString(plain)
		} else {
			*f.value = string(plain)
		}
	}
	return nil
}

var errNoSealer = errors.New("it is encrypted and REPLYFLOW_CODEC_KEYS is not set: set it to the keys it was written with")

// maxMediaLookup bounds the messages one MessageMedia call reads: a
// turn's batch is bounded by the session's queue cap, far below it.
const maxMediaLookup = 200

// MediaLimits bound what the store keeps of users' files' bytes and
// transcripts per chat (a session): at most ChatFiles files within
// ChatBytes as stored (base64 or sealed). Past either, the content kept
// longest ago is dropped (its row stays: a later turn downloads the file
// again, where the platform still has it); the newest is always kept.
type MediaLimits struct {
	ChatFiles int
	ChatBytes int64
}

// DefaultMediaLimits are the bounds without settings: 50 files and
// 100 MiB a chat.
func DefaultMediaLimits() MediaLimits { return MediaLimits{ChatFiles: 50, ChatBytes: 100 << 20} }

// SetMediaLimits sets the per-chat bounds; a zero field keeps
// DefaultMediaLimits' value. Call it before the store is used.
func (s *Store) SetMediaLimits(l MediaLimits) {
	d := DefaultMediaLimits()
	if l.ChatFiles <= 0 {
		l.ChatFiles = d.ChatFiles
	}
	if l.ChatBytes <= 0 {
		l.ChatBytes = d.ChatBytes
	}
	s.mediaLimits = l
}

// MediaLimits are the per-chat bounds in force.
func (s *Store) MediaLimits() MediaLimits { return s.mediaLimits }

// sweepMediaContent drops the content kept before cutoff, up to
// pruneBatch rows, leaving the rows.
func (s *Store) sweepMediaContent(ctx context.Context, cutoff time.Time) error {
	query := fmt.Sprintf(`UPDATE inbound_media SET content = '', transcript = '', stored_at = NULL WHERE (session_id, message_id, seq) IN (
	SELECT session_id, message_id, seq FROM inbound_media WHERE stored_at < ? LIMIT %d)`, pruneBatch)
	if _, err := s.db.ExecContext(ctx, s.q(query), cutoff.UTC()); err != nil {
		return fmt.Errorf("drop the files' content kept before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// trimMediaContent drops a chat's content beyond its newest ChatFiles
// files, and the older ones beyond ChatBytes.
func (s *Store) trimMediaContent(ctx context.Context, db execer, sessionID string) error {
	query := fmt.Sprintf(`UPDATE inbound_media SET content = '', transcript = '', stored_at = NULL WHERE session_id = ? AND (message_id, seq) IN (
	SELECT message_id, seq FROM (
		SELECT message_id, seq,
			ROW_NUMBER() OVER (ORDER BY stored_at DESC, message_id DESC, seq DESC) AS n,
			SUM(OCTET_LENGTH(content) + OCTET_LENGTH(transcript)) OVER (ORDER BY stored_at DESC, message_id DESC, seq DESC ROWS UNBOUNDED PRECEDING) AS total
		FROM inbound_media WHERE session_id = ? AND stored_at IS NOT NULL
	) ranked WHERE n > %d OR (n > 1 AND total > %d))`, s.mediaLimits.ChatFiles, s.mediaLimits.ChatBytes)
	if _, err := db.ExecContext(ctx, s.q(query), sessionID, sessionID); err != nil {
		return fmt.Errorf("trim the files kept for %s to %d files and %d bytes: %w", sessionID, s.mediaLimits.ChatFiles, s.mediaLimits.ChatBytes, err)
	}
	return nil
}

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
	if err := s.sweepMediaContent(ctx, now.Add(-s.retention.Media)); err != nil {
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
		if err := s.openMedia(sessionID, &m); err != nil {
			return nil, err
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
// neither downloads nor transcribes it again. With a Sealer both are
// encrypted.
func (s *Store) SaveMediaContent(ctx context.Context, sessionID, messageID string, seq int, content, transcript string) error {
	content, transcript, err := s.sealMedia(sessionID, messageID, seq, content, withoutNUL(transcript))
	if err != nil {
		return fmt.Errorf("encrypt file %d of message %s of %s: %w", seq, messageID, sessionID, err)
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("save file %d of message %s of %s: %w", seq, messageID, sessionID, err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, s.q(`UPDATE inbound_media SET content = ?, transcript = ?, stored_at = ? WHERE session_id = ? AND message_id = ? AND seq = ?`),
		content, transcript, time.Now().UTC(), sessionID, messageID, seq); err != nil {
		return fmt.Errorf("save file %d of message %s of %s: %w", seq, messageID, sessionID, err)
	}
	if err := s.trimMediaContent(ctx, tx, sessionID); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("save file %d of message %s of %s: %w", seq, messageID, sessionID, err)
	}
	return nil
}

// KeepUpload records the one file of a message uploaded to the gateway
// (the web chat's, which has no platform to download it from later) with
// its bytes (content, base64; sealed with a Sealer), as file 0 of the
// message. It only ever adds: the row and its bytes are one INSERT that
// does nothing when the message already has a file, so neither the
// record nor the bytes of a message are ever replaced, by another
// sender reusing its ID nor by any later upload. The database decides
// which write is first, so the rule holds for any number of gateways.
// When the row exists, a retried upload (the same file and bytes, after
// an answer that was lost or a signal that failed) is nil and writes
// nothing; anything else is adapters.ErrUploadTaken, including a row
// whose bytes are no longer kept (swept, trimmed, or a transcript kept
// instead), which cannot be told apart from another message's. A write
// that fails writes nothing, so its retry starts afresh.
func (s *Store) KeepUpload(ctx context.Context, sessionID, messageID string, m pipeline.Media, content string) error {
	if content == "" {
		return fmt.Errorf("keep the file of message %s of %s: it has no bytes", messageID, sessionID)
	}
	now := time.Now().UTC()
	if err := s.prune(ctx, s.db, "inbound_media", "session_id, message_id, seq", "created_at", now.Add(-s.retention.ToolResults)); err != nil {
		return err
	}
	if err := s.sweepMediaContent(ctx, now.Add(-s.retention.Media)); err != nil {
		return err
	}
	sealed, _, err := s.sealMedia(sessionID, messageID, 0, content, "")
	if err != nil {
		return fmt.Errorf("encrypt the file of message %s of %s: %w", messageID, sessionID, err)
	}
	kept, err := s.insertUpload(ctx, sessionID, messageID, m, sealed, now)
	if err != nil {
		return fmt.Errorf("keep the file of message %s of %s: %w", messageID, sessionID, err)
	}
	if kept {
		return nil
	}
	have := StoredMedia{MessageID: messageID}
	err = s.db.QueryRowContext(ctx, s.q(`SELECT kind, ref, mime_type, name, content FROM inbound_media WHERE session_id = ? AND message_id = ? AND seq = 0`),
		sessionID, messageID).Scan(&have.Kind, &have.Ref, &have.MimeType, &have.Name, &have.Content)
	if errors.Is(err, sql.ErrNoRows) {
		// Pruned between the insert and this read: the message is older
		// than the files' retention, and is no retry.
		return fmt.Errorf("keep the file of message %s of %s: %w", messageID, sessionID, adapters.ErrUploadTaken)
	}
	if err != nil {
		return fmt.Errorf("read the file of message %s of %s: %w", messageID, sessionID, err)
	}
	if err := s.openMedia(sessionID, &have); err != nil {
		return err
	}
	if have.Media != m || have.Content != content {
		return fmt.Errorf("keep the file of message %s of %s: %w", messageID, sessionID, adapters.ErrUploadTaken)
	}
	return nil
}

// insertUpload inserts an upload's row with its bytes, unless the
// message has one, and trims the chat's files; kept says whether it
// inserted.
func (s *Store) insertUpload(ctx context.Context, sessionID, messageID string, m pipeline.Media, sealed string, now time.Time) (kept bool, err error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	res, err := tx.ExecContext(ctx, s.q(`INSERT INTO inbound_media (session_id, message_id, seq, kind, ref, mime_type, name, content, stored_at, created_at) VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_id, message_id, seq) DO NOTHING`),
		sessionID, messageID, m.Kind, m.Ref, m.MimeType, m.Name, sealed, now, now)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if err := s.trimMediaContent(ctx, tx, sessionID); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// UploadedFile reads back the bytes of a file uploaded to a platform
// with no file store of its own (the web chat), by the reference its
// gateway gave it; ok is false once the store no longer keeps them.
func (s *Store) UploadedFile(ctx context.Context, ref string) ([]byte, bool, error) {
	var m StoredMedia
	var sessionID string
	err := s.db.QueryRowContext(ctx, s.q(`SELECT session_id, message_id, seq, content FROM inbound_media WHERE ref = ? AND content <> '' ORDER BY stored_at DESC LIMIT 1`), ref).
		Scan(&sessionID, &m.MessageID, &m.Seq, &m.Content)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read uploaded file %s: %w", ref, err)
	}
	if err := s.openMedia(sessionID, &m); err != nil {
		return nil, false, err
	}
	data, err := base64.StdEncoding.DecodeString(m.Content)
	if err != nil {
		return nil, false, fmt.Errorf("read uploaded file %s of session %s: its content is not base64: %w", ref, sessionID, err)
	}
	return data, true, nil
}
