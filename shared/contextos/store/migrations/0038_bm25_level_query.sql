-- dialect: postgres
-- 0038 (PostgreSQL): the BM25 gathering's "at least m of n lexemes" tsquery, written smaller.
--
-- Profiled at 100k (the benchmark's 150 queries, each level's statement timed alone): a level's
-- cost is its GIN bitmap scan (~40-50 %), scoring the rows it reads (~40 %) and their heap visits;
-- the scan spends its time less in decoding the posting lists (all six lexemes' lists OR-ed cost
-- 2.8 ms where "at least 4 of them" cost 5.0 ms) than in the tsquery's consistent function, called
-- for every posting of the lexemes a level requires and evaluated over the whole query tree. 0027's
-- recursion at_least(m, [x, rest]) = (x & at_least(m - 1, rest)) | at_least(m, rest) grows to 34
-- operands for 3 of 6. Splitting the lexemes in halves A and B instead,
--     at_least(m, A ++ B) = OR over i of (at_least(i, A) & at_least(m - i, B)),
-- with the plain AND (m = n) and OR (m = 1) as the leaves, asks for the same memories with 22
-- operands (16 for 2 of 6): the bitmap scans of the benchmark's levels 16 % faster (227 level scans,
-- 560 -> 471 ms), the same rows in every one. The level walk, the bound and the scores are 0035's.
CREATE OR REPLACE FUNCTION contextos_at_least_query(lex text[], m integer) RETURNS text
LANGUAGE plpgsql IMMUTABLE
SET search_path = public, pg_temp
AS $fn$
DECLARE
    n integer := coalesce(cardinality(lex), 0);
    h integer := coalesce(cardinality(lex), 0) / 2;
    a text;
    b text;
    parts text[] := '{}';
BEGIN
    IF m <= 0 OR m > n THEN
        RETURN NULL;  -- nothing to ask for (m = 0), or no memory can match (m > n): the callers' m never is
    END IF;
    IF m = n THEN
        RETURN '(' || array_to_string(ARRAY(SELECT contextos_lexeme_literal(x) FROM unnest(lex) x), ' & ') || ')';
    END IF;
    IF m = 1 THEN
        RETURN '(' || array_to_string(ARRAY(SELECT contextos_lexeme_literal(x) FROM unnest(lex) x), ' | ') || ')';
    END IF;
    -- i of the m from the first half, m - i from the second (a NULL half asks for nothing)
    FOR i IN REVERSE least(m, h) .. greatest(0, m - (n - h)) LOOP
        a := contextos_at_least_query(lex[1:h], i);
        b := contextos_at_least_query(lex[h + 1:n], m - i);
        parts := parts || CASE WHEN a IS NULL THEN b WHEN b IS NULL THEN a ELSE '(' || a || ' & ' || b || ')' END;
    END LOOP;
    RETURN '(' || array_to_string(parts, ' | ') || ')';
END
$fn$;
-- dialect: cockroach
-- 0038 (CockroachDB): no plpgsql and no BM25 gathering (see 0016).
SELECT 1;
-- dialect: end
