-- 0021 on CockroachDB: the contradiction gate scans a tenant's vectors exactly on this dialect
-- (contextos.store.governance), so the subject-term index of the PostgreSQL variant is not needed.
SELECT 1;
