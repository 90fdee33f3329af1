-- The document a chunked /export started sending, fixed at its first
-- attempt: a retry sends the rest of this document, not one rebuilt from
-- a transcript that changed meanwhile (its parts are keyed by index in
-- the delivery ledger). One row per export, kept as long as the ledger
-- keeps its parts (store.Retention.Deliveries), deleted as new exports
-- are written.
CREATE TABLE export_documents (
    session_id TEXT NOT NULL,
    export_key TEXT NOT NULL,
    document   TEXT NOT NULL,
    messages   INTEGER NOT NULL,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, export_key)
);
CREATE INDEX export_documents_created ON export_documents (created_at);
