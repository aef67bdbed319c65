-- dialect: postgres
-- 0011 (PostgreSQL): governance of what gets in (S7) and a tamper-evident audit log (S3).

-- Bi-temporal history. valid_from / valid_to say when a memory was true; recorded_at says when we
-- learned it; superseded_at says when we stopped believing it (the transaction time of the
-- supersession). "What did we believe at T" (as_of) is recorded_at <= T and not superseded by T.
-- dialect: cockroach
-- 0011 (CockroachDB): the same columns, head table and chaining trigger (CockroachDB 24.3+ runs
-- PL/pgSQL row triggers). Differences from PostgreSQL: sha256(text) already returns hex; the
-- trigger function is not SECURITY DEFINER, so the application role may write the head table
-- (it still cannot UPDATE or DELETE audit rows, and verify checks the head against the last
-- row); there is no backfill (ALTER TABLE … DISABLE TRIGGER does not exist there, and a
-- CockroachDB store starts empty); the as_of text search runs inline in the store, like 0008.
-- Not exercised here: no CockroachDB binary is obtainable on this machine (FIELD-NOTES).
-- dialect: end
ALTER TABLE memories ADD COLUMN IF NOT EXISTS superseded_at timestamptz;
CREATE INDEX IF NOT EXISTS memories_superseded_by
    ON memories (tenant_id, superseded_by) WHERE superseded_by IS NOT NULL;
-- dialect: postgres

-- The review queue: pending candidates are listed oldest first, page by page.
-- dialect: end
CREATE INDEX IF NOT EXISTS review_queue_pending
    ON review_queue (tenant_id, created_at, id) WHERE status = 'pending';

-- dialect: postgres
-- The hash chain. Every audit row carries its place in its tenant's chain (chain_seq, 1, 2, …),
-- the previous entry's hash and its own: sha256 over the previous hash and the row's canonical
-- text. A BEFORE INSERT trigger fills them, serialized per tenant through the head row below, so
-- every writer (plain INSERTs anywhere in the code) is chained without knowing about it.
-- dialect: end
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
-- dialect: postgres
    USING (tenant_id = current_setting('app.tenant_id', true));
-- The application role only reads heads; the trigger (SECURITY DEFINER) moves them.
GRANT SELECT ON audit_chain_heads TO contextos_app;

-- The canonical text of an entry: each field length-prefixed ("<octets>:<value>", "~" for NULL)
-- and joined by "|", so no two different rows share a text. The time is in epoch microseconds
-- and details is the server's own jsonb rendering; `contextos audit verify` rebuilds the same
-- text in Python from the stored columns and recomputes every hash independently of this code.
-- dialect: cockroach
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, UPDATE ON audit_chain_heads TO contextos_app;

-- dialect: end
CREATE OR REPLACE FUNCTION audit_log_canonical(
    prev_hash text, tenant_id text, chain_seq bigint, id uuid, at timestamptz, actor text, action text,
    memory_id uuid, reason text, details jsonb
) RETURNS text
LANGUAGE sql IMMUTABLE
-- dialect: postgres
SET search_path = public, pg_temp
-- dialect: end
AS $fn$
    SELECT string_agg(CASE WHEN f IS NULL THEN '~' ELSE octet_length(f)::text || ':' || f END, '|' ORDER BY n)
    FROM unnest(ARRAY[
-- dialect: postgres
        prev_hash, tenant_id, chain_seq::text, id::text, ((extract(epoch FROM at) * 1000000)::bigint)::text,
-- dialect: cockroach
        prev_hash, tenant_id, chain_seq::text, id::text, ((extract(epoch FROM at) * 1000000)::int8)::text,
-- dialect: end
        actor, action, memory_id::text, reason, details::text
    ]) WITH ORDINALITY AS t(f, n)
$fn$;

-- dialect: postgres
-- The chaining function is a repeatable definition (store/definitions/audit_log_chain.sql, with the
-- statement trigger that moves the head), applied after the migrations. Until then this one
-- refuses an audit row rather than write it unchained.
CREATE OR REPLACE FUNCTION audit_log_chain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $fn$
BEGIN
    RAISE EXCEPTION 'the audit chain is not defined yet: the store''s definitions are applied after the migrations';
END
$fn$;
REVOKE ALL ON FUNCTION audit_log_chain() FROM PUBLIC;
-- dialect: cockroach
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
-- dialect: end

DROP TRIGGER IF EXISTS audit_log_chain ON audit_log;
CREATE TRIGGER audit_log_chain BEFORE INSERT ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_chain();
-- dialect: postgres

-- Chain the rows written before this migration, per tenant in insertion order (a one-time loop;
-- the append-only trigger is lifted for the length of this transaction only).
ALTER TABLE audit_log DISABLE TRIGGER audit_log_no_update;
DO $$
DECLARE
    r         record;
    last_t    text := NULL;
    last_seq  bigint;
    last_hash text;
    new_hash  text;
BEGIN
    FOR r IN SELECT * FROM audit_log WHERE chain_seq IS NULL ORDER BY tenant_id, seq LOOP
        IF last_t IS DISTINCT FROM r.tenant_id THEN
            last_t := r.tenant_id;
            last_seq := 0;
            last_hash := repeat('0', 64);
        END IF;
        last_seq := last_seq + 1;
        new_hash := encode(sha256(convert_to(audit_log_canonical(
            last_hash, r.tenant_id, last_seq, r.id, r.at, r.actor, r.action, r.memory_id, r.reason, r.details),
            'UTF8')), 'hex');
        UPDATE audit_log SET chain_seq = last_seq, prev_hash = last_hash, hash = new_hash
        WHERE tenant_id = r.tenant_id AND seq = r.seq;
        INSERT INTO audit_chain_heads (tenant_id, chain_seq, hash) VALUES (r.tenant_id, last_seq, new_hash)
        ON CONFLICT (tenant_id) DO UPDATE SET chain_seq = EXCLUDED.chain_seq, hash = EXCLUDED.hash;
        last_hash := new_hash;
    END LOOP;
END
$$;
ALTER TABLE audit_log ENABLE TRIGGER audit_log_no_update;

-- contextos_text_search_as_of, the 0008 function's plan with the belief predicate instead of
-- "active", was defined here; 0015's contextos_text_search_phrases replaced it and dropped it.
-- dialect: end
