-- dialect: postgres
-- 0005: Powertools idempotency records (contextos.store.idempotency), one row per handled SQS
-- message, so a redelivered message is answered from its record instead of being processed again.
-- Columns mirror Powertools' DynamoDB layer: expiration in unix seconds (the record's TTL),
-- in_progress_expiration in unix milliseconds (the Lambda deadline of the run holding the key).
-- dialect: cockroach
-- 0005 (CockroachDB 25.2+): Powertools idempotency records (contextos.store.idempotency), one row
-- per handled SQS message. Same table and queries as PostgreSQL; see 0005_idempotency.sql.
-- dialect: end
--
-- Not tenant-scoped, so no row-level security: the key is a hash of the SQS message id (no
-- tenant in it), and the idempotency check runs before the message body is parsed, when the
-- tenant is not yet known. Rows hold no customer content, only a small receipt (message id and
-- body digest). contextos_app reaches the table from system transactions, like tenants.
CREATE TABLE IF NOT EXISTS idempotency_records (
    id                     text PRIMARY KEY,
    expiration             bigint NOT NULL,
    in_progress_expiration bigint,
    status                 text NOT NULL CHECK (status IN ('INPROGRESS', 'COMPLETED', 'EXPIRED')),
    data                   text,
    validation             text
);
-- dialect: postgres
-- purge_expired() deletes by expiry: PostgreSQL has no TTL of its own.
CREATE INDEX IF NOT EXISTS idempotency_records_expiration ON idempotency_records (expiration);
-- dialect: cockroach
-- The difference: expiration grows with the clock, so a plain index on it sends every insert to
-- one range (a write hotspot); a hash-sharded index spreads them. purge_expired() still reads it.
-- (Row-level TTL could replace purge_expired() here; not enabled until verified on a cluster.)
CREATE INDEX IF NOT EXISTS idempotency_records_expiration ON idempotency_records (expiration) USING HASH;
-- dialect: end

GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_records TO contextos_app;
