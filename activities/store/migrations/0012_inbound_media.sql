-- The files of users' messages, by reference: the gateway records each
-- accepted message's media (the platform's references, never the bytes)
-- before it signals the session, and the turn's activity reads them by
-- message ID, downloads each once and keeps what it made of it: an
-- image's bytes (base64, bounded by the worker's REPLYFLOW_MEDIA_MAX_BYTES)
-- or a voice note's transcript. At most pipeline.MaxMedia rows a message;
-- a row is deleted Retention.ToolResults after the message arrived (a
-- turn reads its messages' files no later than its tool results).
CREATE TABLE inbound_media (
    session_id TEXT NOT NULL,
    message_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    kind       TEXT NOT NULL,
    ref        TEXT NOT NULL,
    mime_type  TEXT NOT NULL,
    name       TEXT NOT NULL,
    content    TEXT NOT NULL DEFAULT '',
    transcript TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, message_id, seq)
);
CREATE INDEX inbound_media_created ON inbound_media (created_at);
