-- dialect: postgres
-- The audit log's chaining row trigger (S3): each entry gets the next sequence number of its
-- tenant's chain, the hash of the entry before it, and its own hash over the canonical text
-- (audit_log_canonical, migration 0011). The trigger itself is created by migration 0011.
--
-- An entry finds its predecessor at the tenant's head row for the first entry of a statement, and
-- at the statement's own previous entry after that (row-level BEFORE triggers see the rows their
-- statement inserted before); the head row is written once, after the statement
-- (audit_log_chain_head), not twice per entry. The head stays the reference: an entry after a
-- deleted tail still chains to the head, so verify reports the gap instead of the next write
-- hiding it. The head row's lock serializes one tenant's writers until commit.
-- (CockroachDB keeps 0011's per-entry variant: it has no statement triggers with transition tables.)
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
-- dialect: end
