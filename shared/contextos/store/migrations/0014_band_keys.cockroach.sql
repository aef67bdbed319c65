-- 0014 (CockroachDB): as for PostgreSQL. A memory's LSH band keys live on its vector row too, so
-- its band rows are found (and deleted) by primary key, and the (tenant_id, memory_id) index of
-- 0006 goes: every ingested memory paid 16 inserts into it for the rare delete.
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS band_keys INT4[];
UPDATE memory_vectors v SET band_keys = k.keys
FROM (SELECT tenant_id, memory_id, array_agg(band_key ORDER BY band_key) AS keys
      FROM memory_vector_bands GROUP BY tenant_id, memory_id) k
WHERE v.tenant_id = k.tenant_id AND v.memory_id = k.memory_id AND v.band_keys IS NULL;
DROP INDEX IF EXISTS memory_vector_bands_memory;

-- PostgreSQL also re-keys the band rows by a bigint bucket (tenant hash above the band key);
-- CockroachDB keeps (tenant_id, band_key, memory_id): Dialect.band_match_sql picks the lookup.
-- The 64-bit signature prefix column exists here too (the store writes it); the Hamming
-- prefilter stays off on CockroachDB (Dialect.signature_filter_sql), as before.
ALTER TABLE memory_vector_bands ADD COLUMN IF NOT EXISTS signature64 INT8;

-- memory_items: a document's items have no session and a conversation's no document, yet every
-- item went into both indexes. Partial indexes keep only the rows each serves (an equality on the
-- column implies it is not null, so every lookup and the cascade from documents still use them).
CREATE INDEX IF NOT EXISTS memory_items_document_set ON memory_items (tenant_id, document_id)
    WHERE document_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memory_items_session_set ON memory_items (tenant_id, session_id)
    WHERE session_id IS NOT NULL;
DROP INDEX IF EXISTS memory_items_document;
DROP INDEX IF EXISTS memory_items_session;
