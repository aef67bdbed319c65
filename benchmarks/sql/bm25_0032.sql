-- Migration 0032's BM25 (replaced in 0035) under its own name, with the scope gathering it calls
-- (dropped in 0051): the A/B baseline of benchmarks/retrieval_scoped.py; never installed by the migrations.
CREATE OR REPLACE FUNCTION contextos_bm25_scope_gather(
    tenant text, tsq text, as_of timestamptz, scope_user text, scope_agent text, scope_run text,
    scope_tags text[], lim integer
)
RETURNS uuid[]
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $fn$
DECLARE
    got uuid[];
BEGIN
    IF tsq IS NULL OR tsq = '' THEN
        RETURN '{}';
    END IF;
    EXECUTE format(
        'SELECT coalesce(array_agg(s.id), ''{}'') FROM (SELECT m.id FROM memories m'
        ' WHERE m.tenant_id = $1 AND m.search_tsv @@ $2::tsquery AND %s%s%s%s%s %s) s',
        CASE WHEN as_of IS NULL THEN 'm.state = ''active'' AND m.tier = ''hot'''
             ELSE 'm.tier = ''hot'' AND m.state <> ''archived'' AND m.recorded_at <= $3'
                  ' AND (m.superseded_at IS NULL OR m.superseded_at > $3)' END,
        CASE WHEN scope_user IS NULL THEN '' ELSE ' AND m.user_id = $4' END,
        CASE WHEN scope_agent IS NULL THEN '' ELSE ' AND m.agent_id = $5' END,
        CASE WHEN scope_run IS NULL THEN '' ELSE ' AND m.run_id = $6' END,
        CASE WHEN scope_tags IS NULL THEN '' ELSE ' AND m.tags @> $7' END,
        CASE WHEN lim IS NULL THEN '' ELSE 'LIMIT $8' END)
    INTO got
    USING tenant, tsq, as_of, scope_user, scope_agent, scope_run, scope_tags, lim;
    RETURN got;
END
$fn$;
REVOKE ALL ON FUNCTION contextos_bm25_scope_gather(text, text, timestamptz, text, text, text, text[], integer)
    FROM PUBLIC;

CREATE OR REPLACE FUNCTION contextos_bm25_rank_0032(
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
        END IF;
    END IF;
    IF scoped AND cap IS NULL THEN
        -- every match of the scope, by a statement planned for it (its own index, or that index
        -- intersected with the text index), then scored: not one generic plan for every scope
        cand := contextos_bm25_scope_gather(
            tenant, array_to_string(ARRAY(SELECT contextos_lexeme_literal(x) FROM unnest(lex) x), ' | '), as_of,
            scope_user, scope_agent, scope_run, scope_tags, NULL);
        RETURN QUERY
            SELECT m.id, s.score, s.matched, false
            FROM memories m
            CROSS JOIN LATERAL contextos_bm25_score(m.search_tsv, lex, wt, idf, k1, b, avglen) s
            WHERE m.tenant_id = tenant AND m.id = ANY (cand)
            ORDER BY 2 DESC, 1
            LIMIT k;
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
        FOR need IN REVERSE coalesce(cardinality(gather), 0) .. 1 LOOP
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
                cand := cand || got;
                cand_score := cand_score || got_score;
                cand_matched := cand_matched || got_matched;
                EXIT;
            END IF;
            cand := got;
            cand_score := got_score;
            cand_matched := got_matched;
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
            SELECT m.id,
                   sum(t.w * t.idf * tf.n / (tf.n + k1 * (1 - b + b * length(m.stub_tsv) / avglen)))::real,
                   count(*)::integer, true
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
            CROSS JOIN LATERAL unnest(ts_filter(setweight(m.stub_tsv, 'A', lex), '{a}')) u
            JOIN unnest(lex, wt, idf) t(lexeme, w, idf) ON t.lexeme = u.lexeme
            CROSS JOIN LATERAL (SELECT coalesce(cardinality(u.positions), 1)::double precision AS n) tf
            GROUP BY m.id
            ORDER BY 2 DESC, 1
            LIMIT k;
    END IF;
END
$fn$;
REVOKE ALL ON FUNCTION contextos_bm25_rank_0032 FROM PUBLIC;
GRANT EXECUTE ON FUNCTION contextos_bm25_rank_0032 TO contextos_app;
