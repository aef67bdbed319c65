-- dialect: postgres
-- 0015 (PostgreSQL): every key phrase of a query in one call, with the work per phrase bounded.
--
-- 0008 ran one call per phrase and ranked up to 500 matches of each of two query forms, the
-- second an OR of prefix matches: at 100k memories a broad phrase cost 10-20 ms, and a query has up
-- to five phrases. Here each phrase first ranks the memories holding all of its words, or all the
-- words of one of its synonyms (exact lexemes, 0008's formula); only when fewer than k do, the
-- memories holding some of them fill the remaining places, after them. At most ``cap`` matches of
-- each form are ranked.
--
-- A word that a large share of a big tenant's memories hold ("team", "day") tells the ranking
-- almost nothing (its BM25 weight is near zero), yet reading its posting list costs milliseconds.
-- The lifecycle scan records such lexemes per tenant (text_common_lexemes, only for tenants above
-- a configured size) and the search leaves them out; a phrase made only of them is skipped.
-- dialect: cockroach
-- 0015 (CockroachDB): no function and no ts_stat; the store runs the phrase searches inline (see
-- contextos.store.text_search) and keeps every word. The table exists so the schema is the same.
-- dialect: end
CREATE TABLE IF NOT EXISTS text_common_lexemes (
    tenant_id  text NOT NULL,
    lexeme     text NOT NULL,
-- dialect: postgres
    share      real NOT NULL,  -- the share of the tenant's hot memories holding it
-- dialect: cockroach
    share      real NOT NULL,
-- dialect: end
    counted_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, lexeme)
);
ALTER TABLE text_common_lexemes ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON text_common_lexemes;
CREATE POLICY tenant_isolation ON text_common_lexemes
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, DELETE ON text_common_lexemes TO contextos_app;
-- dialect: postgres

-- A lexeme as a quoted tsquery operand: the lexemes come from to_tsvector over the caller's text, so
-- the text is only ever parsed as words, never as tsquery syntax.
CREATE OR REPLACE FUNCTION contextos_lexeme_literal(lexeme text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
AS $fn$ SELECT '''' || replace(replace(lexeme, '\', '\\'), '''', '''''') || '''' $fn$;

-- ``terms`` holds every phrase's own text and its synonyms, ``term_phrase`` the
-- 1-based phrase each belongs to. ``as_of`` NULL reads the present (active, hot); otherwise what
-- was believed then (S7). The tenant comes only from the transaction's setting.
CREATE OR REPLACE FUNCTION contextos_text_search_phrases(
    phrases text[], terms text[], term_phrase integer[], k integer, cap integer, as_of timestamptz DEFAULT NULL
)
RETURNS TABLE (phrase_no integer, id uuid, rank real, label_match boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $fn$
DECLARE
    tenant text := NULLIF(current_setting('app.tenant_id', true), '');
    common text[];
    all_text text;
    any_text text;
    all_q tsquery;
    any_q tsquery;
    found integer;
BEGIN
    IF tenant IS NULL THEN
        RETURN;
    END IF;
    common := ARRAY(SELECT c.lexeme FROM text_common_lexemes c WHERE c.tenant_id = tenant);
    FOR i IN 1 .. coalesce(array_length(phrases, 1), 0) LOOP
        -- (every lexeme of the phrase) | (every lexeme of a synonym) | ..., and any of them
        SELECT string_agg('(' || g.conj || ')', ' | ') INTO all_text FROM (
            SELECT string_agg(contextos_lexeme_literal(v.lexeme), ' & ' ORDER BY v.lexeme) AS conj
            FROM unnest(terms, term_phrase) WITH ORDINALITY AS t(term, phrase_no, n)
            CROSS JOIN LATERAL unnest(to_tsvector('english', t.term)) AS v
            WHERE t.phrase_no = i AND v.lexeme <> ALL (common)
            GROUP BY t.n
        ) g;
        SELECT string_agg(DISTINCT contextos_lexeme_literal(v.lexeme), ' | ') INTO any_text
        FROM unnest(terms, term_phrase) AS t(term, phrase_no)
        CROSS JOIN LATERAL unnest(to_tsvector('english', t.term)) AS v
        WHERE t.phrase_no = i AND v.lexeme <> ALL (common);
        CONTINUE WHEN all_text IS NULL;
        all_q := all_text::tsquery;
        any_q := any_text::tsquery;
        RETURN QUERY
            SELECT * FROM (
                SELECT i, m.id, (2.0 * ts_rank_cd(m.search_tsv, all_q) + ts_rank(m.search_tsv, any_q))::real,
                       (position(lower(phrases[i]) IN lower(m.label)) > 0
                        OR position(lower(phrases[i]) IN lower(m.definition)) > 0)
                FROM memories m
                WHERE m.tenant_id = tenant AND m.search_tsv @@ all_q
                  AND CASE WHEN as_of IS NULL THEN m.state = 'active' AND m.tier = 'hot'
                           ELSE m.tier = 'hot' AND m.state <> 'archived' AND m.recorded_at <= as_of
                                AND (m.superseded_at IS NULL OR m.superseded_at > as_of) END
                LIMIT cap
            ) hit
            ORDER BY 4 DESC, 3 DESC, 2
            LIMIT k;
        GET DIAGNOSTICS found = ROW_COUNT;
        CONTINUE WHEN found >= k OR any_q = all_q;  -- a single word has no second form
        -- Fewer than k hold every word: memories holding some of them, after those that do.
        RETURN QUERY
            SELECT * FROM (
                SELECT i, m.id, ts_rank(m.search_tsv, any_q)::real, false
                FROM memories m
                WHERE m.tenant_id = tenant AND m.search_tsv @@ any_q AND NOT (m.search_tsv @@ all_q)
                  AND CASE WHEN as_of IS NULL THEN m.state = 'active' AND m.tier = 'hot'
                           ELSE m.tier = 'hot' AND m.state <> 'archived' AND m.recorded_at <= as_of
                                AND (m.superseded_at IS NULL OR m.superseded_at > as_of) END
                LIMIT cap
            ) hit
            ORDER BY 3 DESC, 2
            LIMIT k - found;
    END LOOP;
END
$fn$;
REVOKE ALL ON FUNCTION contextos_text_search_phrases(text[], text[], integer[], integer, integer, timestamptz)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION contextos_text_search_phrases(text[], text[], integer[], integer, integer, timestamptz)
    TO contextos_app;

-- The per-phrase functions this one replaces.
DROP FUNCTION IF EXISTS contextos_text_search(text, text, integer, integer);
DROP FUNCTION IF EXISTS contextos_text_search_as_of(text, text, integer, integer, timestamptz);

-- Composite trust counts each candidate's ``corroborates`` edges on every read; most memories have
-- none, and these small partial indexes answer that without visiting the memory's other edges.
-- dialect: end
CREATE INDEX IF NOT EXISTS relationships_corroborates_src
    ON relationships (tenant_id, src_id) WHERE type = 'corroborates';
CREATE INDEX IF NOT EXISTS relationships_corroborates_dst
    ON relationships (tenant_id, dst_id) WHERE type = 'corroborates';
