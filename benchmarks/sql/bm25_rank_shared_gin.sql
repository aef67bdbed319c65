-- contextos_bm25_rank as it was before a small tenant read its own rows (every tenant's text went
-- through the shared text index), under its deployed name: the "before" of benchmarks/scale.py,
-- which installs it for its before phase and puts the current definition back after; never
-- installed by the migrations.
-- BM25 over the tenant's own statistics, and cold stubs the text search still finds.
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
-- History: migrations 0016 (the formula), 0027 (levels, scope), 0032 (one pass), 0035 (walk from the middle).
CREATE OR REPLACE FUNCTION contextos_bm25_rank(
    query text, extra text[], extra_weight real, k integer, cap integer, k1 real, b real,
    df_live_max integer, as_of timestamptz DEFAULT NULL, with_cold boolean DEFAULT false,
    scope_user text DEFAULT NULL, scope_agent text DEFAULT NULL, scope_run text DEFAULT NULL,
    scope_tags text[] DEFAULT NULL
)
RETURNS TABLE (id uuid, score real, matched integer, cold boolean)
LANGUAGE plpgsql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
SET plan_cache_mode = force_generic_plan
AS $fn$
DECLARE
    tenant text := NULLIF(current_setting('app.tenant_id', true), '');
    n_docs double precision;
    avglen double precision;
    lex text[];
    wt real[];
    idf double precision[];
    gather text[];
    qlex text[];
    qw real[];
    missing text[];
    live_lex text[];
    live_n double precision[];
    gdf double precision[];
    cand uuid[] := '{}';
    cand_score real[] := '{}';
    cand_matched integer[] := '{}';
    got_score real[];
    got_matched integer[];
    level_q text;
    need integer;
    going integer := 0;  -- the level walk's direction: -1 down, 1 up, 0 not yet moved
    got uuid[];
    counted boolean;
    owned bigint;
    scoped boolean := scope_user IS NOT NULL OR scope_agent IS NOT NULL OR scope_run IS NOT NULL
                      OR scope_tags IS NOT NULL;
BEGIN
    IF tenant IS NULL THEN
        RETURN;
    END IF;
    SELECT s.docs, s.avg_length INTO n_docs, avglen FROM text_tenant_stats s WHERE s.tenant_id = tenant;
    counted := FOUND;
    IF NOT counted THEN
        SELECT t.hot_memories INTO n_docs FROM tenants t WHERE t.tenant_id = tenant;
        SELECT avg(length(s.search_tsv)) INTO avglen FROM (
            SELECT m.search_tsv FROM memories m
            WHERE m.tenant_id = tenant AND m.state = 'active' AND m.tier = 'hot' LIMIT 2000
        ) s;
    END IF;
    n_docs := greatest(coalesce(n_docs, 1), 1);
    avglen := greatest(coalesce(avglen, 1), 1);

    -- The query's lexemes, each with its weight (a synonym's lower one unless the query holds it).
    SELECT array_agg(v.lexeme ORDER BY v.lexeme), array_agg(v.w ORDER BY v.lexeme) INTO qlex, qw FROM (
        SELECT v.lexeme, max(t.w)::real AS w
        FROM (SELECT query AS term, 1.0::real AS w
              UNION ALL SELECT e, extra_weight FROM unnest(coalesce(extra, '{}'::text[])) e) t
        CROSS JOIN LATERAL unnest(to_tsvector('english', t.term)) v
        GROUP BY v.lexeme
    ) v;
    IF qlex IS NULL THEN
        RETURN;
    END IF;
    -- Their document frequencies: the scan's count, else counted live in one pass over at most
    -- ``df_live_max`` memories holding any of the uncounted ones.
    missing := ARRAY(
        SELECT x FROM unnest(qlex) x
        WHERE NOT EXISTS (SELECT 1 FROM text_lexeme_stats s WHERE s.tenant_id = tenant AND s.lexeme = x));
    IF cardinality(missing) > 0 THEN
        SELECT array_agg(c.lexeme), array_agg(c.n) INTO live_lex, live_n FROM (
            SELECT u.lexeme, count(*)::double precision AS n
            FROM (
                SELECT m.search_tsv FROM memories m
                WHERE m.tenant_id = tenant AND m.state = 'active' AND m.tier = 'hot'
                  AND m.search_tsv @@ array_to_string(
                        ARRAY(SELECT contextos_lexeme_literal(x) FROM unnest(missing) x), ' | ')::tsquery
                LIMIT df_live_max
            ) m
            CROSS JOIN LATERAL unnest(ts_filter(setweight(m.search_tsv, 'A', missing), '{a}')) u
            GROUP BY u.lexeme
        ) c;
    END IF;
    SELECT array_agg(q.lexeme ORDER BY q.df, q.lexeme), array_agg(q.w ORDER BY q.df, q.lexeme),
           array_agg(ln(1 + (n_docs - least(q.df, n_docs) + 0.5) / (least(q.df, n_docs) + 0.5)) ORDER BY q.df, q.lexeme),
           array_agg(q.lexeme ORDER BY q.df, q.lexeme) FILTER (WHERE NOT q.common AND q.df > 0),
           array_agg(q.df ORDER BY q.df, q.lexeme) FILTER (WHERE NOT q.common AND q.df > 0)
      INTO lex, wt, idf, gather, gdf
    FROM (
        SELECT l.lexeme, l.w,
               coalesce(
                   (SELECT s.docs FROM text_lexeme_stats s WHERE s.tenant_id = tenant AND s.lexeme = l.lexeme),
                   (SELECT d.n FROM unnest(live_lex, live_n) d(lexeme, n) WHERE d.lexeme = l.lexeme), 0
               )::double precision AS df,
               (cap IS NOT NULL AND EXISTS (
                    SELECT 1 FROM text_common_lexemes c WHERE c.tenant_id = tenant AND c.lexeme = l.lexeme)) AS common
        FROM unnest(qlex, qw) l(lexeme, w)
    ) q;  -- (a lexeme no hot memory holds gathers nothing, but a cold stub may hold it)
    IF lex IS NULL THEN
        RETURN;
    END IF;
    IF gather IS NULL THEN  -- only common words: the rarest of them gathers
        gather := lex[1:1];
        gdf := ARRAY[1e9];
    END IF;
    gather := gather[1:6];  -- the rarest six lexemes gather; every lexeme scores

    -- When the tenant is small or the gathering lexemes' postings are short, every match is
    -- scored: exact, and cheaper than gathering by levels.
    IF cap IS NOT NULL AND (n_docs <= 4 * cap OR (SELECT sum(d) FROM unnest(gdf[1:cardinality(gather)]) d) <= 4 * cap) THEN
        cap := NULL;
    END IF;
    IF scoped AND cap IS NOT NULL AND coalesce(scope_user, scope_agent, scope_run) IS NOT NULL THEN
        -- an owner (user, agent, run) of at most 20 · cap hot memories, counted through its btree
        -- (index-only), has every match scored: exact, and cheaper than the levels
        EXECUTE format(
            'SELECT count(*) FROM (SELECT 1 FROM memories m WHERE m.tenant_id = $1 AND m.state = ''active'''
            ' AND m.tier = ''hot''%s%s%s LIMIT $5) s',
            CASE WHEN scope_user IS NULL THEN '' ELSE ' AND m.user_id = $2' END,
            CASE WHEN scope_agent IS NULL THEN '' ELSE ' AND m.agent_id = $3' END,
            CASE WHEN scope_run IS NULL THEN '' ELSE ' AND m.run_id = $4' END)
        INTO owned
        USING tenant, scope_user, scope_agent, scope_run, 20 * cap + 1;
        IF owned <= 20 * cap THEN
            cap := NULL;
        ELSE
            owned := NULL;
        END IF;
    END IF;
    IF scoped AND cap IS NULL THEN
        -- every match of the scope, by a statement planned for it (its own index, or that index
        -- intersected with the text index), then scored: not one generic plan for every scope
        -- found through the owner's btree when it was counted small, else the text index
        RETURN QUERY SELECT r.id, r.score, r.matched, false FROM contextos_bm25_scope_rank(
            tenant, array_to_string(ARRAY(SELECT contextos_lexeme_literal(x) FROM unnest(lex) x), ' | '), as_of,
            scope_user, scope_agent, scope_run, scope_tags, lex, wt, idf, k1, b, avglen, k, owned) r;
    ELSIF cap IS NULL THEN  -- exact: every match, scored as it is read
        PERFORM set_config('plan_cache_mode', 'auto', true);  -- a small tenant's best plan is its own rows
        RETURN QUERY
            SELECT m.id, s.score, s.matched, false
            FROM memories m
            CROSS JOIN LATERAL contextos_bm25_score(m.search_tsv, lex, wt, idf, k1, b, avglen) s
            WHERE m.tenant_id = tenant
              AND m.search_tsv @@ array_to_string(ARRAY(SELECT contextos_lexeme_literal(x) FROM unnest(lex) x), ' | ')::tsquery
              AND CASE WHEN as_of IS NULL THEN m.state = 'active' AND m.tier = 'hot'
                       ELSE m.tier = 'hot' AND m.state <> 'archived' AND m.recorded_at <= as_of
                            AND (m.superseded_at IS NULL OR m.superseded_at > as_of) END
              AND (scope_user IS NULL OR m.user_id = scope_user) AND (scope_agent IS NULL OR m.agent_id = scope_agent)
              AND (scope_run IS NULL OR m.run_id = scope_run) AND (scope_tags IS NULL OR m.tags @> scope_tags)
            ORDER BY 2 DESC, 1
            LIMIT k;
    ELSE
        -- The walk starts at half the gathering lexemes, not at all of them, and goes down while a
        -- level has fewer than ``cap`` matches, up while it has more: the result is the top-down
        -- walk's (the matches of the highest level with fewer than ``cap``, each level's including
        -- those above it, plus ``cap`` of the level below), but the levels above the start, which
        -- at 100k mostly hold a handful of memories and cost a GIN scan each, are not scanned.
        need := greatest(1, ceil(coalesce(cardinality(gather), 0) / 2.0)::integer);
        LOOP
            -- memories holding at least ``need`` of the gathering lexemes
            level_q := contextos_at_least_query(gather, need);
            -- (this level's matches include the previous level's, which are all kept: no exclusion
            -- list to check per row, at the cost of a few duplicates)
            SELECT coalesce(array_agg(g.id), '{}'), coalesce(array_agg(g.score), '{}'), coalesce(array_agg(g.matched), '{}')
              INTO got, got_score, got_matched
            FROM (
                SELECT m.id, s.score, s.matched FROM memories m
                CROSS JOIN LATERAL contextos_bm25_score(m.search_tsv, lex, wt, idf, k1, b, avglen) s
                WHERE m.tenant_id = tenant COLLATE "C" AND m.search_tsv @@ level_q::tsquery
                  AND CASE WHEN as_of IS NULL THEN m.state = 'active' AND m.tier = 'hot'
                           ELSE m.tier = 'hot' AND m.state <> 'archived' AND m.recorded_at <= as_of
                                AND (m.superseded_at IS NULL OR m.superseded_at > as_of) END
                  AND (scope_user IS NULL OR m.user_id = scope_user) AND (scope_agent IS NULL OR m.agent_id = scope_agent)
                  AND (scope_run IS NULL OR m.run_id = scope_run) AND (scope_tags IS NULL OR m.tags @> scope_tags)
                LIMIT cap
            ) g;
            IF cardinality(got) >= cap THEN
                IF going = -1 THEN  -- the level above had fewer: all of it, and ``cap`` of this one
                    cand := cand || got;
                    cand_score := cand_score || got_score;
                    cand_matched := cand_matched || got_matched;
                    EXIT;
                END IF;
                IF need >= cardinality(gather) THEN  -- the top level is full: ``cap`` of it
                    cand := got;
                    cand_score := got_score;
                    cand_matched := got_matched;
                    EXIT;
                END IF;
                cand := got;  -- ``cap`` of this level, kept while the levels above are asked
                cand_score := got_score;
                cand_matched := got_matched;
                going := 1;
                need := need + 1;
            ELSIF going = 1 THEN  -- the first level above the full ones: all of it, and ``cap`` below
                cand := cand || got;
                cand_score := cand_score || got_score;
                cand_matched := cand_matched || got_matched;
                EXIT;
            ELSE
                cand := got;
                cand_score := got_score;
                cand_matched := got_matched;
                EXIT WHEN need <= 1;
                going := -1;
                need := need - 1;
            END IF;
        END LOOP;
        -- (the last level's matches include the previous level's: the duplicates score alike)
        RETURN QUERY
            SELECT c.id, max(c.score), max(c.matched), false
            FROM unnest(cand, cand_score, cand_matched) c(id, score, matched)
            GROUP BY c.id
            ORDER BY 2 DESC, 1
            LIMIT k;
    END IF;

    IF with_cold AND as_of IS NULL THEN
        -- cold stubs by their kept lexical form, scored with the same statistics
        RETURN QUERY
            SELECT m.id, s.score, s.matched, true
            FROM (
                SELECT m0.id FROM memories m0
                WHERE m0.tenant_id = tenant COLLATE "C" AND m0.tier = 'cold' AND m0.superseded_by IS NULL
                  AND m0.cold_object_key IS NOT NULL
                  AND m0.stub_tsv @@ array_to_string(
                        ARRAY(SELECT contextos_lexeme_literal(x) FROM unnest(lex) x), ' | ')::tsquery
                  AND (scope_user IS NULL OR m0.user_id = scope_user) AND (scope_agent IS NULL OR m0.agent_id = scope_agent)
                  AND (scope_run IS NULL OR m0.run_id = scope_run) AND (scope_tags IS NULL OR m0.tags @> scope_tags)
                LIMIT coalesce(cap, 1000000)
            ) c
            JOIN memories m ON m.tenant_id = tenant AND m.id = c.id
            CROSS JOIN LATERAL contextos_bm25_score(m.stub_tsv, lex, wt, idf, k1, b, avglen) s
            WHERE s.matched > 0  -- (a stub holding none of the lexemes scores nothing, as a hot memory)
            ORDER BY 2 DESC, 1
            LIMIT k;
    END IF;
END
$fn$;
REVOKE ALL ON FUNCTION contextos_bm25_rank(text, text[], real, integer, integer, real, real, integer, timestamptz, boolean, text, text, text, text[])
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION contextos_bm25_rank(text, text[], real, integer, integer, real, real, integer, timestamptz, boolean, text, text, text, text[])
    TO contextos_app;
