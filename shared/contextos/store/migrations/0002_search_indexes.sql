-- dialect: postgres
-- 0002 (PostgreSQL + pgvector): ANN and full-text indexes for the three searches (S6.2).
CREATE INDEX IF NOT EXISTS memory_vectors_hnsw
    ON memory_vectors USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
    WHERE searchable;
CREATE INDEX IF NOT EXISTS memories_search_tsv ON memories USING gin (search_tsv);
CREATE INDEX IF NOT EXISTS memories_label_lower ON memories (tenant_id, lower(label) text_pattern_ops);
-- dialect: cockroach
-- 0002 (CockroachDB 25.2+): a tenant-prefixed vector index and an inverted full-text index.
CREATE VECTOR INDEX IF NOT EXISTS memory_vectors_embedding_vec
    ON memory_vectors (tenant_id, embedding vector_cosine_ops);
CREATE INVERTED INDEX IF NOT EXISTS memories_search_tsv ON memories (search_tsv);
CREATE INDEX IF NOT EXISTS memories_label_lower ON memories (tenant_id, lower(label));
-- dialect: end
