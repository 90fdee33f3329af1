package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Retention is how long the store keeps the rows it prunes. Each table is
// pruned as new rows are written to it, by whichever worker writes: no
// process of its own, nothing remembered between calls, and two workers
// pruning at once delete the same rows harmlessly. A zero field keeps
// DefaultRetention's value.
//
// What is kept, and for how long (docs/how-it-works.md, "What the store
// keeps", says the same):
//   - tool_results, stream_shown: ToolResults after they were written.
//   - inbound_media (the files of users' messages, media.go): ToolResults
//     after the message arrived, at most pipeline.MaxMedia a message; the
//     bytes and transcripts kept in it, Media after they were kept, and
//     per chat at most MediaLimits' files and bytes.
//   - message_ids (the delivery ledger): Deliveries after the chunk was sent.
//   - export_documents: Deliveries after the export started, as long as
//     the ledger entries of its parts.
//   - transcript_messages: a transcript no session continues any more
//     (after /new, a reset word, a context reset, /compact), Transcripts
//     after it was left; a session's current transcript, its messages
//     newer than Transcripts and always its newest CurrentTranscriptKept.
//   - feedback_events: Feedback after the reaction.
//   - chat_log (what the web chat shows): ChatLog after a message was
//     last written, and per chat at most ChatLogMessages messages within
//     ChatLogBytes (chatlog.go).
//   - sessions: one row per session that kept something (a setting, a
//     transcript), kept (the chat's settings); reading a session's
//     settings makes none (SavedSettings), so a refused stranger leaves
//     no row.
//   - voice_replies: one row per chat whose voice replies someone
//     switched (/voice), kept like sessions (voice.go).
//   - owners: who claimed the agent, kept.
//   - claim_codes: one per worker start while the agent has no owner,
//     valid for its ttl (REPLYFLOW_CLAIM_TTL); the expired unused ones are
//     deleted at the next start, all unused ones once the agent has an
//     owner, claimed or configured (RevokeClaimCodes).
//   - budget_usage, spend_guards, breaker_trips: Spend after their last
//     write (spend.go).
//   - claim_failures: ClaimFailureWindow, pruned on every claim, at most
//     ClaimFailuresTotal rows (a claim over a limit is not recorded).
type Retention struct {
	ToolResults time.Duration
	Deliveries  time.Duration
	Transcripts time.Duration
	Feedback    time.Duration
	Spend       time.Duration
	ChatLog     time.Duration
	// Media is how long the bytes and transcripts of users' files are
	// kept; zero is as long as their rows, ToolResults.
	Media time.Duration
}

// toolResultsMargin is what a turn may spend between its first tool
// result and its last model step besides waiting for decisions: model
// attempts, fallbacks and cooldowns, tool runs, posting proposals. Each is
// bounded by its own timeout (REPLYFLOW_TURN_TIMEOUT, _TURN_ATTEMPTS,
// _DELIVERY_DEADLINE), together hours at most with any sane setting; and
// it is the floor, what the store always kept.
const toolResultsMargin = 48 * time.Hour

// ToolResultsRetention is how long a turn's tool results must be kept for
// its later steps to read them: a turn waits for decisions at most once a
// step, each wait ending REPLYFLOW_PROPOSAL_TTL after its proposals were
// posted (then they expire), so no turn reads a result older than
// maxSteps × proposalTTL plus the margin. A proposalTTL of zero is the
// session's own default, 24 h.
func ToolResultsRetention(proposalTTL time.Duration, maxSteps int) time.Duration {
	if proposalTTL <= 0 {
		proposalTTL = 24 * time.Hour
	}
	return toolResultsMargin + time.Duration(max(maxSteps, 1))*proposalTTL
}

// CurrentTranscriptKept is how many of its newest messages a session's
// current transcript keeps whatever their age: what a prompt may read
// (activities' transcript window), so that the retention never changes
// what the model sees.
const CurrentTranscriptKept = 200

// DefaultRetention is what the store keeps without settings: tool results
// for the default proposal TTL and steps (24 h, 8), the delivery ledger
// 30 days (a reaction on an older bot message is recorded unresolved; a
// parked delivery retried later may send its chunk again), transcripts
// and feedback 90 days, budgets and breaker trips 30 days, the web chat's
// log 30 days, the files' content as long as the tool results.
func DefaultRetention() Retention {
	return Retention{
		ToolResults: ToolResultsRetention(24*time.Hour, 8),
		Deliveries:  30 * 24 * time.Hour,
		Transcripts: 90 * 24 * time.Hour,
		Feedback:    90 * 24 * time.Hour,
		Spend:       30 * 24 * time.Hour,
		ChatLog:     30 * 24 * time.Hour,
		Media:       ToolResultsRetention(24*time.Hour, 8),
	}
}

// SetRetention sets what the store keeps; call it before the store is
// used.
func (s *Store) SetRetention(r Retention) {
	d := DefaultRetention()
	for _, f := range []struct{ set, def *time.Duration }{
		{&r.ToolResults, &d.ToolResults}, {&r.Deliveries, &d.Deliveries},
		{&r.Transcripts, &d.Transcripts}, {&r.Feedback, &d.Feedback}, {&r.Spend, &d.Spend},
		{&r.ChatLog, &d.ChatLog},
	} {
		if *f.set <= 0 {
			*f.set = *f.def
		}
	}
	if r.Media <= 0 || r.Media > r.ToolResults {
		// The row goes after ToolResults, and its content with it.
		r.Media = r.ToolResults
	}
	s.retention = r
}

// pruneBatch bounds the rows one prune deletes. A write adds one row and
// may delete this many, so a backlog (a store upgraded from a release
// that kept everything, or a long pause) only shrinks, over the next
// writes, and never in one statement long enough to time the write out.
const pruneBatch = 500

// execer is a database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// prune deletes up to pruneBatch rows of table whose column is before
// cutoff; key is the table's primary key (its columns, comma-separated).
// Writes prune before they write: an error then means nothing was
// written, as the callers report.
func (s *Store) prune(ctx context.Context, db execer, table, key, column string, cutoff time.Time) error {
	query := fmt.Sprintf(`DELETE FROM %[1]s WHERE (%[2]s) IN (SELECT %[2]s FROM %[1]s WHERE %[3]s < ? LIMIT %[4]d)`, table, key, column, pruneBatch)
	if _, err := db.ExecContext(ctx, s.q(query), cutoff.UTC()); err != nil {
		return fmt.Errorf("delete the rows of %s older than %s: %w", table, cutoff.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// abandonedBatch bounds the left transcripts one write deletes (each
// whole: a transcript is at most what its retention let it keep).
const abandonedBatch = 10

// pruneAbandoned deletes the transcripts left before cutoff. One a
// session points at again (a compaction retried after /new) is its
// current transcript and stays.
func (s *Store) pruneAbandoned(ctx context.Context, db execer, cutoff time.Time) error {
	rows, err := db.QueryContext(ctx, s.q(fmt.Sprintf(`SELECT transcript_id FROM abandoned_transcripts WHERE abandoned_at < ? ORDER BY abandoned_at LIMIT %d`, abandonedBatch)), cutoff.UTC())
	if err != nil {
		return fmt.Errorf("find the transcripts left before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return fmt.Errorf("find the transcripts left before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("find the transcripts left before %s: %w", cutoff.UTC().Format(time.RFC3339), err)
	}
	for _, id := range ids {
		if _, err := db.ExecContext(ctx, s.q(`DELETE FROM transcript_messages WHERE transcript_id = ? AND NOT EXISTS (SELECT 1 FROM sessions WHERE transcript_id = ?)`), id, id); err != nil {
			return fmt.Errorf("delete transcript %s, left before %s: %w", id, cutoff.UTC().Format(time.RFC3339), err)
		}
		if _, err := db.ExecContext(ctx, s.q(`DELETE FROM abandoned_transcripts WHERE transcript_id = ?`), id); err != nil {
			return fmt.Errorf("delete transcript %s, left before %s: %w", id, cutoff.UTC().Format(time.RFC3339), err)
		}
	}
	return nil
}

// trimCurrent deletes a transcript's messages older than cutoff beyond
// its newest CurrentTranscriptKept (up to pruneBatch of them); lastSeq is
// its newest message's.
func (s *Store) trimCurrent(ctx context.Context, db execer, transcriptID string, lastSeq int64, cutoff time.Time) error {
	query := fmt.Sprintf(`DELETE FROM transcript_messages WHERE transcript_id = ? AND message_key IN (SELECT message_key FROM transcript_messages WHERE transcript_id = ? AND seq <= ? AND created_at < ? LIMIT %d)`, pruneBatch)
	if _, err := db.ExecContext(ctx, s.q(query), transcriptID, transcriptID, lastSeq-CurrentTranscriptKept, cutoff.UTC()); err != nil {
		return fmt.Errorf("delete the messages of transcript %s older than %s: %w", transcriptID, cutoff.UTC().Format(time.RFC3339), err)
	}
	return nil
}

// Retention is what the store keeps (SetRetention, or the defaults).
func (s *Store) Retention() Retention { return s.retention }
