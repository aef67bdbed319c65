-- dialect: postgres
-- 0003: the application role, row-level security keyed on a per-transaction tenant setting,
-- and an append-only audit log. The runtime connects (or SET ROLEs) as contextos_app, which
-- is neither superuser nor table owner, so the policies always apply to it.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'contextos_app') THEN
        CREATE ROLE contextos_app NOLOGIN;
    END IF;
END
$$;
GRANT contextos_app TO CURRENT_USER;
-- dialect: cockroach
-- 0003 (CockroachDB 25.2+): the application role, row-level security and the append-only
-- audit log. CockroachDB has no DO blocks for this and no statement-level (TRUNCATE) triggers:
-- the role is created idempotently, the migration user's membership is granted by the
-- operator (docs/decisions.md), and TRUNCATE is refused by privileges alone.
CREATE ROLE IF NOT EXISTS contextos_app;
-- dialect: end
GRANT USAGE ON SCHEMA public TO contextos_app;

GRANT SELECT ON store_meta, tenants, api_keys TO contextos_app;
GRANT INSERT ON tenants, api_keys TO contextos_app;
-- dialect: postgres
GRANT UPDATE (revoked_at) ON api_keys TO contextos_app;
-- dialect: cockroach
GRANT UPDATE ON api_keys TO contextos_app;  -- CockroachDB has no column privileges
-- dialect: end
GRANT SELECT, INSERT, UPDATE, DELETE
    ON documents, memories, memory_vectors, memory_items, relationships, sessions, messages,
       review_queue, context_log, reminders
    TO contextos_app;
GRANT SELECT, INSERT ON audit_log TO contextos_app;
-- dialect: postgres
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM contextos_app;
-- dialect: cockroach
REVOKE UPDATE, DELETE ON audit_log FROM contextos_app;
-- dialect: end
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO contextos_app;

ALTER TABLE documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE memories ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_vectors ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_items ENABLE ROW LEVEL SECURITY;
ALTER TABLE relationships ENABLE ROW LEVEL SECURITY;
ALTER TABLE sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE review_queue ENABLE ROW LEVEL SECURITY;
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE context_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE reminders ENABLE ROW LEVEL SECURITY;

DROP POLICY IF EXISTS tenant_isolation ON documents;
CREATE POLICY tenant_isolation ON documents
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON memories;
CREATE POLICY tenant_isolation ON memories
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON memory_vectors;
CREATE POLICY tenant_isolation ON memory_vectors
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON memory_items;
CREATE POLICY tenant_isolation ON memory_items
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON relationships;
CREATE POLICY tenant_isolation ON relationships
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON sessions;
CREATE POLICY tenant_isolation ON sessions
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON messages;
CREATE POLICY tenant_isolation ON messages
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON review_queue;
CREATE POLICY tenant_isolation ON review_queue
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON audit_log;
CREATE POLICY tenant_isolation ON audit_log
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON context_log;
CREATE POLICY tenant_isolation ON context_log
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON reminders;
CREATE POLICY tenant_isolation ON reminders
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

-- Append-only even for the owner: updates, deletes and truncation raise.
CREATE OR REPLACE FUNCTION audit_log_append_only() RETURNS trigger
-- dialect: postgres
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
-- dialect: cockroach
LANGUAGE PLpgSQL AS $$
BEGIN
    RAISE EXCEPTION 'audit_log is append-only (% refused)', TG_OP;
-- dialect: end
END
$$;
DROP TRIGGER IF EXISTS audit_log_no_update ON audit_log;
CREATE TRIGGER audit_log_no_update BEFORE UPDATE OR DELETE ON audit_log
    FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
-- dialect: postgres
DROP TRIGGER IF EXISTS audit_log_no_truncate ON audit_log;
CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
    FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
-- dialect: end
