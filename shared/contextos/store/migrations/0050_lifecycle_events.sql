-- 0050: lifecycle events. The audit log is the outbox: every decision a memory goes through is
-- already an audit row, written in the transaction that made it, so an event can never describe
-- something that did not commit. The relay keeps, per tenant, the last chain position it
-- published (the chain is gap-free in commit order: the trigger serializes a tenant's appends
-- through its head row). Reminders carry when their event went out.
-- Same SQL for both dialects.
CREATE TABLE IF NOT EXISTS event_cursors (
    tenant_id  text PRIMARY KEY,
    chain_seq  bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE event_cursors ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON event_cursors;
CREATE POLICY tenant_isolation ON event_cursors
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, UPDATE ON event_cursors TO contextos_app;

ALTER TABLE reminders ADD COLUMN IF NOT EXISTS event_published_at timestamptz;
CREATE INDEX IF NOT EXISTS reminders_event_unpublished ON reminders (tenant_id, opened_at)
    WHERE event_published_at IS NULL;
