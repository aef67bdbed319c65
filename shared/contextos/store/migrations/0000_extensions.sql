-- dialect: postgres
-- 0000 (PostgreSQL): pgvector provides the vector type and the HNSW index.
CREATE EXTENSION IF NOT EXISTS vector;
-- dialect: cockroach
-- 0000 (CockroachDB): VECTOR is built in (24.2+); there is no extension to create.
SELECT 1;
-- dialect: end
