-- dialect: postgres
-- 0016 (PostgreSQL): BM25 over the tenant's own statistics, and cold stubs the text search still finds.
--
-- score(m) = Σ_t w_t · idf_t · tf / (tf + k1 · (1 − b + b · len(m) / avglen)),
-- idf_t = ln(1 + (N − df_t + 0.5) / (df_t + 0.5))   (the Lucene form, never negative)
-- over the lexemes of the whole query (weight 1) and of its key phrases' synonyms (a lower weight).
-- tf counts a lexeme's positions in the memory's search vector (only the query's lexemes are
-- unnested: setweight marks them, ts_filter keeps them); len is its number of distinct lexemes
-- (O(1) to read, where counting positions means unnesting the whole vector).
--
-- Statistics: N is the tenant's hot count (tenants.hot_memories); df and the mean length come from
-- the lifecycle scan's count (text_tenant_stats, text_lexeme_stats) when it has one, otherwise
-- they are counted live, bounded (df at most ``df_live_max`` rows, the mean over a sample).
--
-- The bound: when the tenant holds at most 4·``cap`` memories, or the query's lexemes are held by
-- at most 4·``cap`` in all, every match is scored (exact). Otherwise the candidates scored are
-- gathered from the GIN index level by level, first the
-- memories holding all of the query's searchable lexemes, then all but one (any m of n), and so on
-- until ``cap`` are gathered; a lexeme most of a large tenant's memories hold is left out of the
-- gathering (text_common_lexemes) but still scores. ``cap`` NULL gathers every match: the exact
-- ranking the bound is measured against (benchmarks/retrieval.py).
-- dialect: cockroach
-- 0016 (CockroachDB): no plpgsql function and no ts_stat; the store keeps the inline phrase search
-- (see contextos.store.text_search). The tables and the stub column exist so the schema is the same.
-- dialect: end
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
-- dialect: postgres

-- A cold stub keeps the lexical form of its label and definition (S5: forgetting demotes), so the
-- text search finds it as the vector search does.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS stub_tsv tsvector;
CREATE INDEX IF NOT EXISTS memories_stub_tsv ON memories USING gin (stub_tsv) WHERE tier = 'cold';

-- contextos_text_search_bm25 was defined here; 0051 drops it (its text: benchmarks/sql/bm25_0016.sql)
-- and store/definitions/contextos_bm25_rank.sql ranks in its place.
-- dialect: cockroach
ALTER TABLE memories ADD COLUMN IF NOT EXISTS stub_tsv tsvector;
-- dialect: end
