-- dialect: postgres
-- 0021: the contradiction gate's neighbour probe by subject (S7). A large tenant's candidates are
-- compared with the active memories that share their subject, found for a whole document in one
-- statement by btree equality (under row-level security a non-leakproof operator such as array
-- overlap cannot use an index, see 0006), instead of one ANN probe per concept.
--
-- A subject term is a pair of the normalized key's words (or its one word): "payments service"
-- and "search service" share a word but no pair, so they are never compared; "feature flag
-- policy" and "flag cleanup policy" share "flag policy". Numbers and one- or two-letter words
-- name no subject.
CREATE OR REPLACE FUNCTION contextos_subject_terms(key text) RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    WITH w AS (
        SELECT DISTINCT x FROM unnest(string_to_array(key, ' ')) AS x
        WHERE length(x) > 2 AND x !~ '^[0-9.-]+$'
    )
    SELECT CASE WHEN (SELECT count(*) FROM w) = 1 THEN ARRAY(SELECT x FROM w)
                ELSE ARRAY(SELECT a.x || ' ' || b.x FROM w a JOIN w b ON a.x < b.x ORDER BY 1) END
$$;

-- One row per (memory, subject term), written with the memory; a key never changes, and the probe
-- joins the memory row (active only), so superseded or archived memories match nothing.
CREATE TABLE IF NOT EXISTS memory_subject_terms (
    tenant_id text NOT NULL,
    term      text NOT NULL,
    memory_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, term, memory_id),
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS memory_subject_terms_memory ON memory_subject_terms (tenant_id, memory_id);
ALTER TABLE memory_subject_terms ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON memory_subject_terms;
CREATE POLICY tenant_isolation ON memory_subject_terms
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, DELETE ON memory_subject_terms TO contextos_app;

-- What the tenant already holds.
INSERT INTO memory_subject_terms (tenant_id, term, memory_id)
SELECT m.tenant_id, t.term, m.id FROM memories m CROSS JOIN LATERAL unnest(contextos_subject_terms(m.norm_key)) AS t(term)
ON CONFLICT DO NOTHING;
-- dialect: cockroach
-- 0021 on CockroachDB: the contradiction gate scans a tenant's vectors exactly on this dialect
-- (contextos.store.governance) and writes no subject terms, so the PostgreSQL variant's function
-- and table are not created here.
SELECT 1;
-- dialect: end
