-- 0023 on CockroachDB: its vector index is prefixed by tenant_id and a scoped vector search joins
-- memories for the scope (contextos.store.scoped_reads), so the PostgreSQL variant's scope copy on
-- memory_vectors, its indexes and triggers are not created here.
SELECT 1;
