-- dialect: postgres
-- 0006: a fresh vector segment outside the ANN index, and LSH bands for near-duplicate lookups.
--
-- Inserting one vector into HNSW costs milliseconds (3-6 ms per row measured here); a document's
-- transaction should not pay that for every concept. New vectors land with indexed = false: reads
-- scan them exactly (a partial btree keeps that set cheap to find) beside the ANN index, and a
-- settle step moves them into the index in batches off the document's critical path.
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS indexed boolean NOT NULL DEFAULT false;
UPDATE memory_vectors SET indexed = true WHERE NOT indexed;
DROP INDEX IF EXISTS memory_vectors_hnsw;
CREATE INDEX IF NOT EXISTS memory_vectors_hnsw
    ON memory_vectors USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
    WHERE searchable AND indexed;
CREATE INDEX IF NOT EXISTS memory_vectors_fresh
    ON memory_vectors (tenant_id) WHERE searchable AND NOT indexed;

-- Random-hyperplane LSH bands of each vector (contextos.lsh): tenant-scoped btree lookups that
-- find near-duplicate candidates without an ANN probe per concept.
-- dialect: cockroach
-- 0006 (CockroachDB): the same columns and bands table. CockroachDB's vector index is not
-- partial, so fresh vectors are already in it; reads de-duplicate the fresh scan and the ANN.
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS indexed boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS memory_vectors_fresh ON memory_vectors (tenant_id) WHERE searchable AND NOT indexed;
-- dialect: end
CREATE TABLE IF NOT EXISTS memory_vector_bands (
    tenant_id text NOT NULL,
    band_key  integer NOT NULL,
    memory_id uuid NOT NULL,
    PRIMARY KEY (tenant_id, band_key, memory_id)
    -- no foreign key: 16 rows per vector would mean 16 checks per insert. Lookups join
    -- memory_vectors, so a band left behind by a deleted memory matches nothing; deletions
    -- remove bands explicitly.
);
CREATE INDEX IF NOT EXISTS memory_vector_bands_memory ON memory_vector_bands (tenant_id, memory_id);
ALTER TABLE memory_vector_bands ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON memory_vector_bands;
CREATE POLICY tenant_isolation ON memory_vector_bands
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, UPDATE, DELETE ON memory_vector_bands TO contextos_app;

-- Acronym lookups by btree equality: under row-level security a non-leakproof operator such as
-- array overlap (&&) cannot use an index, so the GIN index of 0004 made every lookup a scan of
-- the tenant. A label's first acronym token is what pairs it with a long form.
DROP INDEX IF EXISTS memories_acronyms;
CREATE INDEX IF NOT EXISTS memories_first_acronym ON memories (tenant_id, (acronyms[1]))
    WHERE state = 'active' AND cardinality(acronyms) > 0;
