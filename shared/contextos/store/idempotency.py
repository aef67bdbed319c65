"""Powertools idempotency records in our own database instead of a DynamoDB table.

``PostgresPersistenceLayer`` mirrors ``DynamoDBPersistenceLayer`` (aws-lambda-powertools 3.37)
statement for statement, so ``@idempotent_function`` behaves the same on either store:

- put succeeds only when no record exists, the record has expired, or it is INPROGRESS and its
  in-progress expiry (the Lambda deadline, in ms) has passed; otherwise it raises
  ``IdempotencyItemAlreadyExistsError`` carrying the stored record, so Powertools can return the
  saved result without a second read;
- update is an upsert (DynamoDB's ``UpdateItem`` creates a missing item), delete is unconditional.

The conditional put is one ``INSERT … ON CONFLICT DO UPDATE … WHERE … RETURNING``: the engine
decides insert, take-over or refusal under the row's lock, so two consumers of one message never
both win. The SQL is common to PostgreSQL and CockroachDB (verified here on PostgreSQL only).
Expiry timestamps come from the caller's clock, as in the DynamoDB layer. PostgreSQL has no
TTL: ``purge_expired`` deletes expired rows (an expired row is also overwritten by the next put).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

import psycopg
from aws_lambda_powertools.utilities.idempotency import BasePersistenceLayer
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord
from contextos.observability import logger, metrics
from contextos.store.db import Conn, Database

T = TypeVar("T")

TABLE = "idempotency_records"
_COLUMNS = "id, expiration, in_progress_expiration, status, data, validation"
_SERIALIZATION_RETRIES = 3  # CockroachDB (SERIALIZABLE) may ask for a retry under contention

# Insert, or take over a record that is expired or whose in-progress lock has timed out.
# ON CONFLICT locks the existing row even when WHERE refuses the update, so the SELECT that
# follows in the same transaction reads exactly the record that won.
_PUT_SQL = f"""
INSERT INTO {TABLE} AS r ({_COLUMNS})
VALUES (%(id)s, %(expiration)s, %(in_progress_expiration)s, %(status)s, NULL, %(validation)s)
ON CONFLICT (id) DO UPDATE SET
    expiration = EXCLUDED.expiration,
    in_progress_expiration = EXCLUDED.in_progress_expiration,
    status = EXCLUDED.status,
    data = EXCLUDED.data,
    validation = EXCLUDED.validation
WHERE r.expiration < %(now)s
   OR (r.status = %(inprogress)s
       AND r.in_progress_expiration IS NOT NULL
       AND r.in_progress_expiration < %(now_ms)s)
RETURNING id
"""


class PostgresPersistenceLayer(BasePersistenceLayer):
    """Idempotency records in the ``idempotency_records`` table (migration 0005).

    ``database`` is a ``Database`` or a zero-argument callable returning one. The container
    passes its cached ``database`` factory: the layer is bound at import time by the handler's
    decorator, and resolving the pool per call keeps it on the current pool after
    ``container.reset()`` (tests, local stack) while a warm Lambda reuses the same one.
    """

    def __init__(self, database: Database | Callable[[], Database]) -> None:
        super().__init__()
        self._database = database

    @property
    def db(self) -> Database:
        return self._database() if callable(self._database) else self._database

    # -- BasePersistenceLayer ----------------------------------------------------------------
    def _get_record(self, idempotency_key: str) -> DataRecord:
        row = self._in_transaction(
            lambda conn: conn.execute(f"SELECT {_COLUMNS} FROM {TABLE} WHERE id = %s", [idempotency_key]).fetchone()
        )
        if row is None:
            raise IdempotencyItemNotFoundError
        return _to_data_record(row)

    def _put_record(self, data_record: DataRecord) -> None:
        validation = data_record.payload_hash if self.payload_validation_enabled and data_record.payload_hash else None
        now = time.time()
        params = {
            "id": data_record.idempotency_key,
            "expiration": data_record.expiry_timestamp,
            "in_progress_expiration": data_record.in_progress_expiry_timestamp,
            "status": data_record.status,
            "validation": validation,
            "now": int(now),
            "now_ms": int(now * 1000),
            "inprogress": STATUS_CONSTANTS["INPROGRESS"],
        }

        def put(conn: Conn) -> tuple[bool, dict | None]:
            if conn.execute(_PUT_SQL, params).fetchone() is not None:
                return True, None  # inserted, or took over an expired record
            return False, conn.execute(f"SELECT {_COLUMNS} FROM {TABLE} WHERE id = %s", [params["id"]]).fetchone()

        won, existing = self._in_transaction(put)
        if won:
            return
        if existing is None:  # cannot happen under the row lock; Powertools would re-read the record
            raise IdempotencyItemAlreadyExistsError
        old_data_record = _to_data_record(existing)
        logger.debug(
            "idempotency record already exists",
            extra={"idempotency_key": data_record.idempotency_key, "status": old_data_record.status},
        )
        self._validate_payload(data_payload=data_record, stored_data_record=old_data_record)
        self._save_to_cache(data_record=old_data_record)
        raise IdempotencyItemAlreadyExistsError(old_data_record=old_data_record)

    def _update_record(self, data_record: DataRecord) -> None:
        validation = data_record.payload_hash if self.payload_validation_enabled else None
        set_validation = ", validation = EXCLUDED.validation" if self.payload_validation_enabled else ""
        sql = f"""
            INSERT INTO {TABLE} (id, expiration, status, data, validation)
            VALUES (%s, %s, %s, %s, %s)
            ON CONFLICT (id) DO UPDATE SET
                data = EXCLUDED.data, expiration = EXCLUDED.expiration, status = EXCLUDED.status{set_validation}
        """
        params = [
            data_record.idempotency_key,
            data_record.expiry_timestamp,
            data_record.status,
            data_record.response_data,
            validation,
        ]
        self._in_transaction(lambda conn: conn.execute(sql, params))

    def _delete_record(self, data_record: DataRecord) -> None:
        self._in_transaction(
            lambda conn: conn.execute(f"DELETE FROM {TABLE} WHERE id = %s", [data_record.idempotency_key])
        )

    # -- housekeeping ------------------------------------------------------------------------
    def purge_expired(self, now: int | None = None) -> int:
        """Delete records whose expiry (unix seconds) has passed; return how many went.

        What DynamoDB's TTL does for its layer. Safe at any time: an expired record is treated
        as absent by every put anyway.
        """
        cutoff = int(time.time()) if now is None else int(now)
        cursor = self._in_transaction(lambda conn: conn.execute(f"DELETE FROM {TABLE} WHERE expiration < %s", [cutoff]))
        return cursor.rowcount

    # -- internals ---------------------------------------------------------------------------
    def _in_transaction(self, work: Callable[[Conn], T]) -> T:
        """Run ``work`` in one system transaction, retrying the serialization failures CockroachDB raises."""
        for attempt in range(1, _SERIALIZATION_RETRIES + 1):
            try:
                with self.db.system_tx() as conn:
                    return work(conn)
            except psycopg.errors.SerializationFailure:
                if attempt == _SERIALIZATION_RETRIES:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


def _to_data_record(row: dict[str, Any]) -> DataRecord:
    return DataRecord(
        idempotency_key=row["id"],
        status=row["status"],
        expiry_timestamp=row["expiration"],
        in_progress_expiry_timestamp=row["in_progress_expiration"],
        response_data=row["data"],
        payload_hash=row["validation"],
    )


def on_replay(response: Any, record: DataRecord) -> Any:
    """Powertools ``response_hook``: a redelivered message was answered from its saved record."""
    logger.info("duplicate delivery answered from the idempotency record", extra={"status": record.status})
    metrics.add_metric(name="DuplicateDeliveries", unit="Count", value=1)
    return response
