-- Spend budgets and breakers (store/spend.go).
--
-- budget_usage: one row per budget-day and subject (a chat, a sender, the
-- deployment, and a session's refusals): the tokens and money counted,
-- what an owner added for the day, the turns refused and the turn that
-- got the day's one notice. Deleted Retention.Spend after its last write,
-- so it holds (chats + senders + sessions refused + 1) rows per budget-day
-- kept.
CREATE TABLE budget_usage (
    day           TEXT NOT NULL,
    scope         TEXT NOT NULL,
    subject       TEXT NOT NULL,
    tokens        BIGINT NOT NULL DEFAULT 0,
    cost_usd      DOUBLE PRECISION NOT NULL DEFAULT 0,
    raised_tokens BIGINT NOT NULL DEFAULT 0,
    raised_usd    DOUBLE PRECISION NOT NULL DEFAULT 0,
    refused       BIGINT NOT NULL DEFAULT 0,
    notice_turn   TEXT NOT NULL DEFAULT '',
    updated_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (day, scope, subject)
);
CREATE INDEX budget_usage_updated ON budget_usage (updated_at);

-- spend_guards: one row per session a breaker watches: the heartbeat's
-- last answer (a hash), how often in a row, and its back-off, the last
-- model failure's type and turn, how many turns in a row, and the
-- cool-off with the turn that got its notice. Deleted Retention.Spend
-- after its last write.
CREATE TABLE spend_guards (
    session_id          TEXT PRIMARY KEY,
    heartbeat_answer    TEXT NOT NULL DEFAULT '',
    heartbeat_same      INTEGER NOT NULL DEFAULT 0,
    heartbeat_level     INTEGER NOT NULL DEFAULT 0,
    heartbeat_until     TIMESTAMP,
    failure_type        TEXT NOT NULL DEFAULT '',
    failure_turn        TEXT NOT NULL DEFAULT '',
    failures            INTEGER NOT NULL DEFAULT 0,
    cooloff_until       TIMESTAMP,
    cooloff_notice_turn TEXT NOT NULL DEFAULT '',
    updated_at          TIMESTAMP NOT NULL
);
CREATE INDEX spend_guards_updated ON spend_guards (updated_at);

-- breaker_trips: one row per trip (a session, its turn, the breaker),
-- for `replyflow budget list`. Deleted Retention.Spend after the trip.
CREATE TABLE breaker_trips (
    session_id TEXT NOT NULL,
    turn_id    TEXT NOT NULL,
    kind       TEXT NOT NULL,
    detail     TEXT NOT NULL,
    until_at   TIMESTAMP,
    tripped_at TIMESTAMP NOT NULL,
    PRIMARY KEY (session_id, turn_id, kind)
);
CREATE INDEX breaker_trips_at ON breaker_trips (tripped_at);
