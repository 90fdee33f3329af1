-- What the store keeps, and for how long (store/retention.go): indexes for
-- the deletes of rows past their retention, and the transcripts no session
-- continues any more, with when each was left (a transcript is left when
-- the session starts another: /new, a reset word, a context reset,
-- /compact). A left transcript is deleted its retention after that. One
-- row per left transcript, deleted with it.
CREATE INDEX message_ids_created ON message_ids (created_at);
CREATE INDEX feedback_events_created ON feedback_events (created_at);
CREATE INDEX sessions_by_transcript ON sessions (transcript_id);

CREATE TABLE abandoned_transcripts (
    transcript_id TEXT PRIMARY KEY,
    abandoned_at  TIMESTAMP NOT NULL
);
CREATE INDEX abandoned_transcripts_at ON abandoned_transcripts (abandoned_at);

-- Transcripts left before this migration count as left at their last
-- message, the latest time anything used them.
INSERT INTO abandoned_transcripts (transcript_id, abandoned_at)
SELECT transcript_id, MAX(created_at) FROM transcript_messages
WHERE transcript_id NOT IN (SELECT transcript_id FROM sessions)
GROUP BY transcript_id;
