-- 0013 (CockroachDB): the signature column only. The Hamming prefilter needs bit_count over a
-- bit string, which the dialect does not use on CockroachDB (Dialect.signature_filter_sql), so
-- band matches there are checked with the exact cosine as before.
ALTER TABLE memory_vector_bands ADD COLUMN IF NOT EXISTS signature BIT(256);

-- The lower(label) pattern index of 0002 serves no query (text search matches phrases by position
-- inside the label, which a btree cannot answer) but costs every memory insert and update.
DROP INDEX IF EXISTS memories_label_lower;
