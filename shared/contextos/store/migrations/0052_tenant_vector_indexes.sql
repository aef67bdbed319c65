-- dialect: postgres
-- 0052: each large tenant's vectors get an HNSW index of their own (a partial index whose predicate
-- names the tenant), built and dropped online by the lifecycle job (contextos.store.vector_indexes);
-- small tenants are searched exactly. pgvector 0.6 filters an ANN scan after the index: one index
-- over every tenant returns the nearest rows of the whole table, so a tenant holding a few per cent
-- of it got a partial top k or an exact scan of its rows (docs/decisions.md).
--
-- tenants.vector_index names the tenant's index once it is built and valid; the read path sends its
-- ANN statement only then, with the tenant spelt as a literal so that every plan of that text,
-- generic or custom, cached or not, can match the partial index's predicate. The shared index of
-- 0006 stays until the job finds no tenant above the threshold without its own, then goes.
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS vector_index text;
-- dialect: cockroach
-- 0052 (CockroachDB): the vector index of 0002 is prefixed by tenant_id, so every tenant's ANN is
-- already its own; the column is kept for one schema, and stays NULL.
ALTER TABLE tenants ADD COLUMN IF NOT EXISTS vector_index text;
-- dialect: end
