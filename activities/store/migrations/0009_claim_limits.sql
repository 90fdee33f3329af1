-- A claim code expires (REPLYFLOW_CLAIM_TTL after the start that printed
-- it): a code stored before this migration has no expiry and claims
-- nothing. Failed claims are counted to limit guesses: a row per failure
-- within store.ClaimFailureWindow, pruned on every claim, and never more
-- than store.ClaimFailuresTotal rows in a window (a claim over the limit
-- is refused without being recorded).
ALTER TABLE claim_codes ADD COLUMN expires_at TIMESTAMP;

CREATE TABLE claim_failures (
    who       TEXT NOT NULL,
    failed_at TIMESTAMP NOT NULL
);
CREATE INDEX claim_failures_failed ON claim_failures (failed_at);
CREATE INDEX claim_failures_who ON claim_failures (who);
