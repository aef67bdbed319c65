-- 0011 (CockroachDB): the same columns, head table and chaining trigger (CockroachDB 24.3+ runs
-- PL/pgSQL row triggers). Differences from PostgreSQL: sha256(text) already returns hex; the
-- trigger function is not SECURITY DEFINER, so the application role may write the head table
-- (it still cannot UPDATE or DELETE audit rows, and verify checks the head against the last
-- row); there is no backfill (ALTER TABLE … DISABLE TRIGGER does not exist there, and a
-- CockroachDB store starts empty); the as_of text search runs inline in the store, like 0008.
-- Not exercised here: no CockroachDB binary is obtainable on this machine (FIELD-NOTES).
ALTER TABLE memories ADD COLUMN IF NOT EXISTS superseded_at timestamptz;
CREATE INDEX IF NOT EXISTS memories_superseded_by
    ON memories (tenant_id, superseded_by) WHERE superseded_by IS NOT NULL;
CREATE INDEX IF NOT EXISTS review_queue_pending
    ON review_queue (tenant_id, created_at, id) WHERE status = 'pending';

ALTER TABLE audit_log ADD COLUMN IF NOT EXISTS chain_seq bigint;
CREATE UNIQUE INDEX IF NOT EXISTS audit_log_chain ON audit_log (tenant_id, chain_seq);

CREATE TABLE IF NOT EXISTS audit_chain_heads (
    tenant_id  text PRIMARY KEY,
    chain_seq  bigint NOT NULL,
    hash       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE audit_chain_heads ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON audit_chain_heads;
CREATE POLICY tenant_isolation ON audit_chain_heads
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, UPDATE ON audit_chain_heads TO contextos_app;

CREATE OR REPLACE FUNCTION audit_log_canonical(
    prev_hash text, tenant_id text, chain_seq bigint, id uuid, at timestamptz, actor text, action text,
    memory_id uuid, reason text, details jsonb
) RETURNS text
LANGUAGE sql IMMUTABLE
AS $fn$
    SELECT string_agg(CASE WHEN f IS NULL THEN '~' ELSE octet_length(f)::text || ':' || f END, '|' ORDER BY n)
    FROM unnest(ARRAY[
        prev_hash, tenant_id, chain_seq::text, id::text, ((extract(epoch FROM at) * 1000000)::int8)::text,
        actor, action, memory_id::text, reason, details::text
    ]) WITH ORDINALITY AS t(f, n)
$fn$;

CREATE OR REPLACE FUNCTION audit_log_chain() RETURNS trigger
LANGUAGE PLpgSQL AS $fn$
DECLARE
    head_seq  int8;
    head_hash text;
BEGIN
    INSERT INTO audit_chain_heads AS h (tenant_id, chain_seq, hash)
    VALUES ((NEW).tenant_id, 0, repeat('0', 64))
    ON CONFLICT (tenant_id) DO UPDATE SET updated_at = now()
    RETURNING h.chain_seq, h.hash INTO head_seq, head_hash;
    NEW.chain_seq := head_seq + 1;
    NEW.prev_hash := head_hash;
    NEW.at := COALESCE((NEW).at, now());
    NEW.details := COALESCE((NEW).details, '{}'::jsonb);
    NEW.hash := sha256(audit_log_canonical(
        (NEW).prev_hash, (NEW).tenant_id, (NEW).chain_seq, (NEW).id, (NEW).at, (NEW).actor, (NEW).action,
        (NEW).memory_id, (NEW).reason, (NEW).details));
    UPDATE audit_chain_heads SET chain_seq = (NEW).chain_seq, hash = (NEW).hash, updated_at = now()
    WHERE tenant_id = (NEW).tenant_id;
    RETURN NEW;
END
$fn$;

DROP TRIGGER IF EXISTS audit_log_chain ON audit_log;
CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_chain();
