-- 0009: conversation memory (S8). A flush claims a session's unflushed message range and records
-- it here in the same transaction; the row is the outbox of the conversation queue and the
-- job's exactly-once ledger. Its key (tenant, session, first message) means one job per range:
-- two triggers racing for one range cannot both insert it, and a redelivered job finds it done.
-- The same DDL serves PostgreSQL and CockroachDB.
CREATE TABLE IF NOT EXISTS conversation_flushes (
    tenant_id    text NOT NULL,
    session_id   text NOT NULL,
    message_from integer NOT NULL,
    message_to   integer NOT NULL,
    trigger      text NOT NULL CHECK (trigger IN ('end', 'idle', 'size')),
    -- pending: claimed, not yet on the queue; queued: sent; processing: a worker holds it;
    -- done: its memories are stored (same transaction); failed: gave up with a reason.
    status       text NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'queued', 'processing', 'done', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    error        text,
    counts       jsonb NOT NULL DEFAULT '{}'::jsonb,
    created_at   timestamptz NOT NULL DEFAULT now(),
    enqueued_at  timestamptz,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, session_id, message_from),
    CHECK (message_to >= message_from),
    FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);
-- The sweeper re-sends flushes whose send never happened (a crash between commit and send) and
-- sent ones nobody took for an hour (a lost or dead-lettered message).
CREATE INDEX IF NOT EXISTS conversation_flushes_unsent
    ON conversation_flushes (tenant_id, updated_at) WHERE status IN ('pending', 'queued');

-- The sweeper's idle scan: open sessions with unflushed messages, oldest activity first.
CREATE INDEX IF NOT EXISTS sessions_idle
    ON sessions (tenant_id, last_message_at) WHERE status = 'open' AND message_count > flushed_through;

ALTER TABLE conversation_flushes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON conversation_flushes;
CREATE POLICY tenant_isolation ON conversation_flushes
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, UPDATE, DELETE ON conversation_flushes TO contextos_app;
