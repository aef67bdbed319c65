-- dialect: postgres
-- The gathering's tsquery "at least m of the n lexemes" (history: migrations 0027, 0038); CockroachDB has no BM25.
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
-- dialect: end
