-- contextos: no transaction
-- dialect: postgres
-- 0054: the tenant-prefixed text index (0053), built without blocking writes: CREATE INDEX
-- CONCURRENTLY cannot run in a transaction, so this file runs statement by statement (the runner's
-- non-transactional step; a build that died leaves an invalid index, which the runner drops before
-- building it again).
CREATE INDEX CONCURRENTLY IF NOT EXISTS memories_tenant_lexemes
    ON memories USING gin (contextos_tenant_lexemes(tenant_id, search_tsv));
-- dialect: cockroach
SELECT 1;
-- dialect: end
