-- The fingerprint (a digest, never the settings in clear) of the settings
-- that matter to sessions, as the workers of a task queue last applied it
-- to every open session. A worker whose configuration digests otherwise
-- makes every open session reload its settings, then records its own.
-- One row per task queue the store's workers serve: a handful at most,
-- replaced in place, never added to by traffic.
CREATE TABLE settings_fingerprints (
    task_queue  TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    recorded_at TIMESTAMP NOT NULL
);
