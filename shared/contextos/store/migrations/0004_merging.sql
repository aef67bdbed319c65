-- dialect: postgres
-- 0004: what the merge step needs (S4 step 7) and where a document's bytes and text live (step 5).
-- dialect: cockroach
-- 0004 (CockroachDB): as for PostgreSQL, with an inverted index and table-level grants.
-- dialect: end
ALTER TABLE memories ADD COLUMN IF NOT EXISTS initials text;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS acronyms text[] NOT NULL DEFAULT '{}';
CREATE INDEX IF NOT EXISTS memories_initials ON memories (tenant_id, initials) WHERE state = 'active';
-- dialect: postgres
CREATE INDEX IF NOT EXISTS memories_acronyms ON memories USING gin (acronyms) WHERE state = 'active';

-- The original bytes of an API upload that was not plain text (the raw bucket), beside
-- upload_s3_key (a file dropped into the upload bucket) and raw_s3_key (the parsed text when
-- it is over the inline limit).
ALTER TABLE documents ADD COLUMN IF NOT EXISTS source_s3_key text;

-- Step 7 of one document runs under its tenant's row lock, so merges that look at existing
-- memories (acronyms, near duplicates) cannot race a concurrent ingest of the same tenant.
-- The lock row also counts the tenant's hot memories, which picks exact or ANN probes.
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS hot_memories bigint NOT NULL DEFAULT 0;
GRANT UPDATE (hot_memories) ON tenants TO contextos_app;
UPDATE tenants t SET hot_memories = (
    SELECT count(*) FROM memories m WHERE m.tenant_id = t.tenant_id AND m.tier = 'hot' AND m.state = 'active'
-- dialect: cockroach
CREATE INVERTED INDEX IF NOT EXISTS memories_acronyms ON memories (tenant_id, acronyms) WHERE state = 'active';
ALTER TABLE documents ADD COLUMN IF NOT EXISTS source_s3_key text;
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS hot_memories bigint NOT NULL DEFAULT 0;
GRANT UPDATE ON tenants TO contextos_app;  -- CockroachDB has no column privileges
UPDATE tenants SET hot_memories = (
    SELECT count(*) FROM memories m WHERE m.tenant_id = tenants.tenant_id AND m.tier = 'hot' AND m.state = 'active'
-- dialect: end
);
