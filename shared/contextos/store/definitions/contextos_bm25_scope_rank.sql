-- dialect: postgres
-- A small owner scope found and scored in one statement planned for it (history: migration 0035).
CREATE OR REPLACE FUNCTION contextos_bm25_scope_rank(
    tenant text, tsq text, as_of timestamptz, scope_user text, scope_agent text, scope_run text,
    scope_tags text[], lex text[], wt real[], idf double precision[], k1 real, b real, avglen double precision,
    k integer, owner_rows bigint
)
RETURNS TABLE (id uuid, score real, matched integer)
LANGUAGE plpgsql STABLE
SET search_path = public, pg_temp
AS $fn$
BEGIN
    IF tsq IS NULL OR tsq = '' THEN
        RETURN;
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT m.id, sum(t.w * t.idf * tf.n / (tf.n + $11 * (1 - $12 + $12 * length(m.search_tsv) / $13)))::real,'
        '       count(*)::integer'
        ' FROM memories m'
        ' CROSS JOIN LATERAL unnest(ts_filter(setweight(m.search_tsv, ''A'', $8), ''{a}'')) u'
        ' JOIN unnest($8, $9, $10) t(lexeme, w, idf) ON t.lexeme = u.lexeme'
        ' CROSS JOIN LATERAL (SELECT coalesce(cardinality(u.positions), 1)::double precision AS n) tf'
        ' WHERE m.tenant_id = $1 AND %s AND %s%s%s%s%s'
        ' GROUP BY m.id ORDER BY 2 DESC, 1 LIMIT $14',
        -- (the function form of @@ is not an index operator: the owner's btree drives the scan)
        CASE WHEN owner_rows IS NOT NULL AND as_of IS NULL THEN 'ts_match_vq(m.search_tsv, $2::tsquery)'
             ELSE 'm.search_tsv @@ $2::tsquery' END,
        CASE WHEN as_of IS NULL THEN 'm.state = ''active'' AND m.tier = ''hot'''
             ELSE 'm.tier = ''hot'' AND m.state <> ''archived'' AND m.recorded_at <= $3'
                  ' AND (m.superseded_at IS NULL OR m.superseded_at > $3)' END,
        CASE WHEN scope_user IS NULL THEN '' ELSE ' AND m.user_id = $4' END,
        CASE WHEN scope_agent IS NULL THEN '' ELSE ' AND m.agent_id = $5' END,
        CASE WHEN scope_run IS NULL THEN '' ELSE ' AND m.run_id = $6' END,
        CASE WHEN scope_tags IS NULL THEN '' ELSE ' AND m.tags @> $7' END)
    USING tenant, tsq, as_of, scope_user, scope_agent, scope_run, scope_tags, lex, wt, idf, k1, b, avglen, k;
END
$fn$;
REVOKE ALL ON FUNCTION contextos_bm25_scope_rank(
    text, text, timestamptz, text, text, text, text[], text[], real[], double precision[], real, real,
    double precision, integer, bigint) FROM PUBLIC;
-- dialect: end
