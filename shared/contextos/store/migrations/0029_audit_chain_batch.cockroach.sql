-- 0029 (CockroachDB): nothing to do. Its chain trigger (0011's variant) stays per entry: statement
-- triggers with transition tables, which the PostgreSQL variant uses to move the head once per
-- statement, do not exist there.
SELECT 1;
