-- What a streamed answer showed (issue 21): the preview message, the
-- blocks sent. Written as soon as each is sent, so the attempt after a
-- crashed worker edits the same preview and never sends a block twice,
-- even when the crash came before the activity's heartbeat (which
-- carries the same thing) reached Temporal. One row per turn and step.
-- Kept as the tool results are (store.ToolResultsRetention), deleted as
-- new ones are written.
CREATE TABLE stream_shown (
    session_id TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    shown      TEXT NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, turn_id)
);
CREATE INDEX stream_shown_updated ON stream_shown (updated_at);
