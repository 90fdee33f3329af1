-- Owners who claimed the agent with a one-time code, and the codes.
-- Kept: owners, for good. Codes: one per worker start while the agent has
-- no owner, the unused ones deleted when it gets one.
CREATE TABLE owners (
    who        TEXT PRIMARY KEY,
    claimed_at TIMESTAMP NOT NULL
);

CREATE TABLE claim_codes (
    code       TEXT PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    used_by    TEXT NOT NULL DEFAULT ''
);
