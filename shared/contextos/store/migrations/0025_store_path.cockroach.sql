-- 0025 (CockroachDB): nothing. The PostgreSQL file drops a label-prefix index that row-level
-- security keeps PostgreSQL's list from using; CockroachDB's planner and its use of that index
-- were not measured (no binary here), so its index stays.
SELECT 1;
