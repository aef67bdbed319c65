-- dialect: postgres
-- One memory's BM25 over the query's lexemes (0016's formula): an inlinable SQL function, so each
-- scan scores the rows it reads instead of a second pass looking them up by id.
CREATE OR REPLACE FUNCTION contextos_bm25_score(
    tsv tsvector, lex text[], wt real[], idf double precision[], k1 real, b real, avglen double precision
)
RETURNS TABLE (score real, matched integer)
LANGUAGE sql IMMUTABLE
AS $fn$
    SELECT sum(t.w * t.idf * tf.n / (tf.n + k1 * (1 - b + b * length(tsv) / avglen)))::real, count(*)::integer
    FROM unnest(ts_filter(setweight(tsv, 'A', lex), '{a}')) u
    JOIN unnest(lex, wt, idf) t(lexeme, w, idf) ON t.lexeme = u.lexeme
    CROSS JOIN LATERAL (SELECT coalesce(cardinality(u.positions), 1)::double precision AS n) tf
$fn$;
-- dialect: end
