-- 0021: the contradiction gate's neighbour probe by subject (S7). A large tenant's candidates are
-- compared with the active memories that share their subject, found for a whole document in one
-- statement through this index instead of one ANN probe per concept.
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

CREATE INDEX IF NOT EXISTS memories_subject_terms
    ON memories USING gin (contextos_subject_terms(norm_key)) WHERE state = 'active';
