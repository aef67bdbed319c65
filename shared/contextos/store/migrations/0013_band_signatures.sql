-- dialect: postgres
-- 0013: each band row carries its vector's 256-bit LSH signature inside the primary key's index
-- (INCLUDE), so the near-duplicate probe drops false band matches by Hamming distance in an
-- index-only scan instead of reading about 25 full vectors per concept (see contextos.lsh).
-- Rows written before this migration keep a NULL signature and stay candidates.
ALTER TABLE memory_vector_bands ADD COLUMN IF NOT EXISTS signature bit(256);
ALTER TABLE memory_vector_bands DROP CONSTRAINT IF EXISTS memory_vector_bands_pkey;
ALTER TABLE memory_vector_bands
    ADD CONSTRAINT memory_vector_bands_pkey PRIMARY KEY (tenant_id, band_key, memory_id) INCLUDE (signature);
-- dialect: cockroach
-- 0013 (CockroachDB): the signature column only. The Hamming prefilter needs bit_count over a
-- bit string, which the dialect does not use on CockroachDB (Dialect.signature_filter_sql), so
-- band matches there are checked with the exact cosine as before.
ALTER TABLE memory_vector_bands ADD COLUMN IF NOT EXISTS signature BIT(256);
-- dialect: end

-- The lower(label) pattern index of 0002 serves no query (text search matches phrases by position
-- inside the label, which a btree cannot answer) but costs every memory insert and update.
DROP INDEX IF EXISTS memories_label_lower;
