-- Voice replies per chat (/voice on|off): one row per chat, written only
-- when someone switches them. A chat without one follows the owners'
-- default (REPLYFLOW_VOICE_REPLIES). Kept like the sessions' rows: a
-- chat's setting (retention.go).
CREATE TABLE voice_replies (
    chat_id    TEXT PRIMARY KEY,
    spoken     BOOLEAN NOT NULL,
    updated_by TEXT NOT NULL DEFAULT '',
    updated_at TIMESTAMP NOT NULL
);
