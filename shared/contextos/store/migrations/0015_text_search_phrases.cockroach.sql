-- 0015 (CockroachDB): no function and no ts_stat; the store runs the phrase searches inline (see
-- contextos.store.text_search) and keeps every word. The table exists so the schema is the same.
CREATE TABLE IF NOT EXISTS text_common_lexemes (
    tenant_id  text NOT NULL,
    lexeme     text NOT NULL,
    share      real NOT NULL,
    counted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, lexeme)
);
ALTER TABLE text_common_lexemes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON text_common_lexemes;
CREATE POLICY tenant_isolation ON text_common_lexemes
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, DELETE ON text_common_lexemes TO contextos_app;
CREATE INDEX IF NOT EXISTS relationships_corroborates_src
    ON relationships (tenant_id, src_id) WHERE type = 'corroborates';
CREATE INDEX IF NOT EXISTS relationships_corroborates_dst
    ON relationships (tenant_id, dst_id) WHERE type = 'corroborates';
