-- 0002 (PostgreSQL + pgvector): ANN and full-text indexes for the three searches (S6.2).
CREATE INDEX IF NOT EXISTS memories_embedding_hnsw
    ON memories USING hnsw (embedding vector_cosine_ops) WITH (m = 16, ef_construction = 64)
    WHERE tier = 'hot' AND state = 'active';
CREATE INDEX IF NOT EXISTS memories_search_tsv ON memories USING gin (search_tsv);
CREATE INDEX IF NOT EXISTS memories_label_lower ON memories (tenant_id, lower(label) text_pattern_ops);
