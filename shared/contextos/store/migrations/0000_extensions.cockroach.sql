-- 0000 (CockroachDB): VECTOR is built in (24.2+); there is no extension to create.
SELECT 1;
