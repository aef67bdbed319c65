-- 0016 (CockroachDB): no plpgsql function and no ts_stat; the store keeps the inline phrase search
-- (see contextos.store.text_search). The tables and the stub column exist so the schema is the same.
CREATE TABLE IF NOT EXISTS text_tenant_stats (
    tenant_id  text PRIMARY KEY,
    docs       integer NOT NULL,
    avg_length real NOT NULL,
    counted_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS text_lexeme_stats (
    tenant_id text NOT NULL,
    lexeme    text NOT NULL,
    docs      integer NOT NULL,
    PRIMARY KEY (tenant_id, lexeme)
);
ALTER TABLE text_tenant_stats ENABLE ROW LEVEL SECURITY;
ALTER TABLE text_lexeme_stats ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON text_tenant_stats;
CREATE POLICY tenant_isolation ON text_tenant_stats
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
DROP POLICY IF EXISTS tenant_isolation ON text_lexeme_stats;
CREATE POLICY tenant_isolation ON text_lexeme_stats
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, DELETE ON text_tenant_stats TO contextos_app;
GRANT SELECT, INSERT, DELETE ON text_lexeme_stats TO contextos_app;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS stub_tsv tsvector;
