-- 0021 on CockroachDB: the contradiction gate scans a tenant's vectors exactly on this dialect
-- (contextos.store.governance) and writes no subject terms, so the PostgreSQL variant's function
-- and table are not created here.
SELECT 1;
