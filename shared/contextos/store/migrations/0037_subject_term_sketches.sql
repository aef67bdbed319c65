-- dialect: postgres
-- 0037: the contradiction gate's subject probe drops far vectors inside the term index.
--
-- At 100k memories the probe read up to 256 sharing memories' vector rows per candidate (a 1.5 kB
-- heap row and a cosine each) to keep the few above the similarity floor. Each subject-term row now
-- carries its memory's 256-bit LSH sketch (the 16 band keys' hash bits, contextos.lsh) as an INCLUDE
-- column of the term key, so the probe drops, from the index alone, a memory whose sketch differs
-- from the candidate's in more bits than a pair at the floor plausibly shows (mean + 4 sigma), and
-- reads vectors only for the rest. The sketch follows the vector: a trigger rewrites it whenever a
-- vector row's band keys change (a merge keeping the newer definition, a re-embed, an edit). A row
-- without a sketch stays a candidate.
CREATE OR REPLACE FUNCTION contextos_band_sketch(keys int[]) RETURNS bit(256)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN cardinality(keys) = 16
                THEN string_agg(((k & 65535)::bit(16))::text, '' ORDER BY n)::bit(256) END
    FROM unnest(keys) WITH ORDINALITY AS u(k, n)
$$;

ALTER TABLE memory_subject_terms ADD COLUMN IF NOT EXISTS sketch bit(256);
UPDATE memory_subject_terms st SET sketch = contextos_band_sketch(v.band_keys)
FROM memory_vectors v
WHERE v.tenant_id = st.tenant_id AND v.memory_id = st.memory_id AND v.band_keys IS NOT NULL;
ALTER TABLE memory_subject_terms DROP CONSTRAINT IF EXISTS memory_subject_terms_pkey;
ALTER TABLE memory_subject_terms ADD CONSTRAINT memory_subject_terms_pkey
    PRIMARY KEY (tenant_id, term, memory_id) INCLUDE (sketch);
GRANT UPDATE (sketch) ON memory_subject_terms TO contextos_app;

CREATE OR REPLACE FUNCTION memory_vectors_term_sketch() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE memory_subject_terms SET sketch = contextos_band_sketch(NEW.band_keys)
    WHERE tenant_id = NEW.tenant_id AND memory_id = NEW.memory_id;
    RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS memory_vectors_term_sketch ON memory_vectors;
CREATE TRIGGER memory_vectors_term_sketch
    AFTER UPDATE OF band_keys ON memory_vectors
    FOR EACH ROW WHEN (OLD.band_keys IS DISTINCT FROM NEW.band_keys)
    EXECUTE FUNCTION memory_vectors_term_sketch();
-- dialect: cockroach
-- 0037 on CockroachDB: no subject terms there (0021), so nothing to carry a sketch.
SELECT 1;
-- dialect: end
