-- The delivery ledger's claims: a row with no platform_id yet is a chunk
-- an attempt is sending now, until pending_until (its attempt's deadline
-- and the time to record it). Another attempt that finds the claim waits
-- it out instead of sending the chunk a second time. A claim past its
-- time is an attempt that was cut off or died, and may be taken over.
-- Kept with the ledger's rows (REPLYFLOW_DELIVERY_RETENTION).
ALTER TABLE message_ids ADD COLUMN pending_until TIMESTAMP;
