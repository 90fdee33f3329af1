-- When a file's bytes or transcript were kept (SaveMediaContent): the
-- per-chat bounds drop the content kept longest ago first, and the
-- content is swept Retention.Media after it was kept (the row itself
-- stays, by its own retention, so a later turn can download it again).
-- NULL while nothing is kept.
ALTER TABLE inbound_media ADD COLUMN stored_at TIMESTAMP;
CREATE INDEX inbound_media_stored ON inbound_media (stored_at);
