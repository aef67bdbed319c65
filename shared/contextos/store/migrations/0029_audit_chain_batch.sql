-- dialect: postgres
-- 0029 (PostgreSQL): the audit chain's head moves once per statement, not twice per entry (0011's
-- row trigger upserted and then updated the head row for every entry: two new row versions per
-- audit row). The chain itself is unchanged: same sequence, same hashes, same canonical text. The
-- two functions and the statement trigger are repeatable definitions
-- (store/definitions/audit_log_chain.sql, audit_log_chain_head.sql), applied after the migrations.
SELECT 1;
-- dialect: cockroach
-- 0029 (CockroachDB): nothing to do. Its chain trigger (0011's variant) stays per entry: statement
-- triggers with transition tables, which the PostgreSQL variant uses to move the head once per
-- statement, do not exist there.
SELECT 1;
-- dialect: end
