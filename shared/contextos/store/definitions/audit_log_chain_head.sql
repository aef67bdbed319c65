-- dialect: postgres
-- Once per statement: each tenant's audit chain head moves to the last entry the statement chained
-- (audit_log_chain chains each row; this keeps the head the reference the next statement starts at).
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
-- dialect: end
