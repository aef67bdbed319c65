-- 0012: S9 reports. The daily governance job stores one report per run (latest per tenant is
-- served by GET /v1/governance) and each memory's community, which retrieval reads to give a
-- memory sharing a community with a top hit its graph bonus. Same SQL for both dialects.

CREATE TABLE IF NOT EXISTS governance_reports (
    tenant_id   text NOT NULL,
    id          uuid NOT NULL DEFAULT gen_random_uuid(),
    computed_at timestamptz NOT NULL DEFAULT now(),
    trigger     text NOT NULL CHECK (trigger IN ('schedule', 'on_demand', 'cli')),
    report      jsonb NOT NULL,
    flagged_ids uuid[] NOT NULL DEFAULT '{}',  -- every memory a section flagged (health: cleanliness)
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX IF NOT EXISTS governance_reports_latest ON governance_reports (tenant_id, computed_at DESC);

CREATE TABLE IF NOT EXISTS memory_communities (
    tenant_id   text NOT NULL,
    memory_id   uuid NOT NULL,
    community   integer NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, memory_id),
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS memory_communities_community ON memory_communities (tenant_id, community);

ALTER TABLE governance_reports ENABLE ROW LEVEL SECURITY;
ALTER TABLE memory_communities ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON governance_reports;
CREATE POLICY tenant_isolation ON governance_reports
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON memory_communities;
CREATE POLICY tenant_isolation ON memory_communities
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

GRANT SELECT, INSERT, DELETE ON governance_reports TO contextos_app;
GRANT SELECT, INSERT, UPDATE, DELETE ON memory_communities TO contextos_app;
