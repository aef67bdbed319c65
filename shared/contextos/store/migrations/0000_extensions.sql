-- 0000 (PostgreSQL): pgvector provides the vector type and the HNSW index.
CREATE EXTENSION IF NOT EXISTS vector;
