-- A file uploaded to the web chat is read back by its reference
-- (UploadedFile): the web chat has no platform to download it from.
CREATE INDEX inbound_media_ref ON inbound_media (ref);
