-- The chat settings of /verbose, /usage and /send (issue 18). /think
-- has had think_level since the first migration. (VERBOSE is a reserved
-- word in PostgreSQL, hence tool_lines.)
ALTER TABLE sessions ADD COLUMN tool_lines BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE sessions ADD COLUMN usage_mode TEXT NOT NULL DEFAULT '';
ALTER TABLE sessions ADD COLUMN muted BOOLEAN NOT NULL DEFAULT FALSE;
