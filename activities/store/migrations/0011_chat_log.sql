-- What the web chat shows in each chat: the users' messages and the
-- bot's, each as last edited, with the reaction it shows now. One row per
-- message, and send_key makes a retried send find the first one's row. Each
-- chat keeps its newest ChatLogMessages rows within ChatLogBytes of data,
-- trimmed as rows are written, and a row not written for
-- Retention.ChatLog is deleted (chatlog.go).
CREATE TABLE chat_log (
    chat       TEXT NOT NULL,
    message_id TEXT NOT NULL,
    send_key   TEXT NOT NULL,
    seq        BIGINT NOT NULL,
    kind       TEXT NOT NULL,
    data       TEXT NOT NULL,
    reaction   TEXT NOT NULL DEFAULT '',
    bytes      BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (chat, message_id)
);
CREATE UNIQUE INDEX chat_log_send_key ON chat_log (chat, send_key);
CREATE INDEX chat_log_seq ON chat_log (chat, seq);
CREATE INDEX chat_log_updated ON chat_log (updated_at);
