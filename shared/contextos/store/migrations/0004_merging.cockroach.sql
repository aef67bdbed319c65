-- 0004 (CockroachDB): as for PostgreSQL, with an inverted index and table-level grants.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS initials text;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS acronyms text[] NOT NULL DEFAULT '{}';
CREATE INDEX IF NOT EXISTS memories_initials ON memories (tenant_id, initials) WHERE state = 'active';
CREATE INVERTED INDEX IF NOT EXISTS memories_acronyms ON memories (tenant_id, acronyms) WHERE state = 'active';
ALTER TABLE documents ADD COLUMN IF NOT EXISTS source_s3_key text;
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS hot_memories bigint NOT NULL DEFAULT 0;
GRANT UPDATE ON tenants TO contextos_app;  -- CockroachDB has no column privileges
UPDATE tenants SET hot_memories = (
    SELECT count(*) FROM memories m WHERE m.tenant_id = tenants.tenant_id AND m.tier = 'hot' AND m.state = 'active'
);
