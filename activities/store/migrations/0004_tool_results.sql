-- Tool results kept for the later model steps of their turn (issue 22):
-- the workflow passes references, so a turn's history does not carry
-- every earlier result again at each step. A result is written once, by
-- the tool's activity (which runs once), and read by the steps after it.
-- Kept: as long as its turn may still read it (store.ToolResultsRetention,
-- at least two days), deleted as new ones are written.
CREATE TABLE tool_results (
    session_id TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    call_id    TEXT NOT NULL,
    output     TEXT NOT NULL,
    is_error   BOOLEAN NOT NULL DEFAULT FALSE,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, turn_id, call_id)
);
CREATE INDEX tool_results_created ON tool_results (created_at);
