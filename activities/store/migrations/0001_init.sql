-- Session entries: settings that outlive a workflow run, and the current
-- transcript. Kept: one row per session, its settings.
CREATE TABLE sessions (
    session_id     TEXT PRIMARY KEY,
    transcript_id  TEXT NOT NULL,
    model_override TEXT NOT NULL DEFAULT '',
    think_level    TEXT NOT NULL DEFAULT '',
    queue_json     TEXT NOT NULL DEFAULT '',
    activation     TEXT NOT NULL DEFAULT '',
    updated_at     TIMESTAMP NOT NULL
);

-- Transcripts: one row per message, keyed so a repeated write is a no-op.
-- Kept (store/retention.go): a left transcript, REPLYFLOW_TRANSCRIPT_RETENTION
-- after it was left, a current one, its messages newer than that and
-- always its newest 200.
CREATE TABLE transcript_messages (
    transcript_id TEXT NOT NULL,
    message_key   TEXT NOT NULL,
    seq           BIGINT NOT NULL,
    role          TEXT NOT NULL,
    sender        TEXT NOT NULL DEFAULT '',
    body          TEXT NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (transcript_id, message_key)
);
CREATE INDEX transcript_messages_by_seq ON transcript_messages (transcript_id, seq);

-- The internal-to-platform message ID map, the delivery ledger. Kept:
-- REPLYFLOW_DELIVERY_RETENTION after the chunk was sent.
CREATE TABLE message_ids (
    session_id  TEXT NOT NULL,
    internal_id TEXT NOT NULL,
    platform_id TEXT NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, internal_id)
);
CREATE INDEX message_ids_by_platform ON message_ids (session_id, platform_id);

-- Reaction feedback on the bot's messages. Kept:
-- REPLYFLOW_FEEDBACK_RETENTION after the reaction.
CREATE TABLE feedback_events (
    event_id   TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    unresolved BOOLEAN NOT NULL,
    sender_id  TEXT NOT NULL,
    emoji      TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
