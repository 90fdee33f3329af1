-- Owners who claimed the agent with a one-time code, and the codes.
CREATE TABLE owners (
    who        TEXT PRIMARY KEY,
    claimed_at TIMESTAMP NOT NULL
);

CREATE TABLE claim_codes (
    code       TEXT PRIMARY KEY,
    created_at TIMESTAMP NOT NULL,
    used_by    TEXT NOT NULL DEFAULT ''
);
