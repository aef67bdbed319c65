-- dialect: postgres
-- 0029 (PostgreSQL): the audit chain's head moves once per statement, not twice per entry.
--
-- 0011's row trigger upserted and then updated the tenant's head row for every entry: two new row
-- versions per audit row, 40 for a 20-concept document. The chain itself is unchanged (same
-- sequence, same hashes, same canonical text): each entry still follows the one before it, and the
-- head row's lock still serializes a tenant's writers until commit. What changes is where an entry
-- finds its predecessor: the head row for the first entry of a statement, the statement's own
-- previous entry after that (row-level BEFORE triggers see the rows their statement inserted
-- before), and the head row is written once, after the statement, from its last entry. The head
-- stays the reference: an entry after a deleted tail still chains to the head, so verify reports
-- the gap instead of the next write hiding it.
CREATE OR REPLACE FUNCTION audit_log_chain() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $fn$
DECLARE
    head_seq  bigint;
    head_hash text;
    last_seq  bigint;
    last_hash text;
BEGIN
    -- The head row's lock serializes one tenant's writers until commit (a no-op when held already).
    SELECT h.chain_seq, h.hash INTO head_seq, head_hash
    FROM audit_chain_heads h WHERE h.tenant_id = NEW.tenant_id FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO audit_chain_heads (tenant_id, chain_seq, hash)
        VALUES (NEW.tenant_id, 0, repeat('0', 64)) ON CONFLICT (tenant_id) DO NOTHING;
        SELECT h.chain_seq, h.hash INTO head_seq, head_hash
        FROM audit_chain_heads h WHERE h.tenant_id = NEW.tenant_id FOR UPDATE;
    END IF;
    -- Entries past the head are this statement's own (the head moves at the end of each statement).
    SELECT a.chain_seq, a.hash INTO last_seq, last_hash
    FROM audit_log a WHERE a.tenant_id = NEW.tenant_id AND a.chain_seq > head_seq
    ORDER BY a.chain_seq DESC LIMIT 1;
    IF FOUND THEN
        head_seq := last_seq;
        head_hash := last_hash;
    END IF;
    NEW.chain_seq := head_seq + 1;
    NEW.prev_hash := head_hash;
    NEW.at := COALESCE(NEW.at, now());
    NEW.details := COALESCE(NEW.details, '{}'::jsonb);
    NEW.hash := encode(sha256(convert_to(audit_log_canonical(
        NEW.prev_hash, NEW.tenant_id, NEW.chain_seq, NEW.id, NEW.at, NEW.actor, NEW.action,
        NEW.memory_id, NEW.reason, NEW.details), 'UTF8')), 'hex');
    RETURN NEW;
END
$fn$;
REVOKE ALL ON FUNCTION audit_log_chain() FROM PUBLIC;

-- Once per statement: each tenant's head moves to the last entry the statement chained.
CREATE OR REPLACE FUNCTION audit_log_chain_head() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = public, pg_temp
AS $fn$
BEGIN
    UPDATE audit_chain_heads h SET chain_seq = l.chain_seq, hash = l.hash, updated_at = now()
    FROM (SELECT DISTINCT ON (n.tenant_id) n.tenant_id, n.chain_seq, n.hash
          FROM chained n ORDER BY n.tenant_id, n.chain_seq DESC) l
    WHERE h.tenant_id = l.tenant_id;
    RETURN NULL;
END
$fn$;
REVOKE ALL ON FUNCTION audit_log_chain_head() FROM PUBLIC;

DROP TRIGGER IF EXISTS audit_log_chain_head ON audit_log;
CREATE TRIGGER audit_log_chain_head AFTER INSERT ON audit_log
    REFERENCING NEW TABLE AS chained
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_chain_head();
-- dialect: cockroach
-- 0029 (CockroachDB): nothing to do. Its chain trigger (0011's variant) stays per entry: statement
-- triggers with transition tables, which the PostgreSQL variant uses to move the head once per
-- statement, do not exist there.
SELECT 1;
-- dialect: end
