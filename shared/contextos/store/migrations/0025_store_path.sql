-- dialect: postgres
-- 0025 (PostgreSQL): the store path at speed.
--
-- The label-prefix index of 0018 serves no query: the memory list runs as the application role,
-- under row-level security, where LIKE (not leakproof) cannot use an index, so the list's prefix
-- filter reads the tenant's rows whatever indexes exist (measured: a parallel seq scan at 100k,
-- with the index present). It cost every memory insert, and worse, a second (tenant_id, …) btree
-- beside the primary key lets the planner answer the foreign-key checks of a small or newly grown
-- tenant (memory_vectors, memory_items, relationships, memory_subject_terms → memories) through
-- it, reading the tenant's rows for each check: 0.2-0.4 ms a check instead of 0.02. 0013 dropped
-- the same index once for the first reason.
DROP INDEX IF EXISTS memories_label_prefix;
-- dialect: cockroach
-- 0025 (CockroachDB): nothing. The PostgreSQL file drops a label-prefix index that row-level
-- security keeps PostgreSQL's list from using; CockroachDB's planner and its use of that index
-- were not measured (no binary here), so its index stays.
SELECT 1;
-- dialect: end
