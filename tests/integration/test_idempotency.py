"""Exactly-once SQS processing: Powertools idempotency with its records in PostgreSQL.

First the persistence layer on its own, with the semantics of Powertools' DynamoDB layer; then
the real ingest handler fed real SQS events, where only idempotency can explain the outcome.
"""

from __future__ import annotations

import json
import threading
import time
import uuid

import pytest
from aws_lambda_powertools.utilities.batch.exceptions import BatchProcessingError
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent_function
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyItemAlreadyExistsError,
    IdempotencyItemNotFoundError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import DataRecord
from contextos import container
from contextos.local.events import LocalLambdaContext, sqs_event
from contextos.local.handlers import invoke
from contextos.store.idempotency import PostgresPersistenceLayer

from tests.conftest import REPO
from tests.helpers import call_api

INGEST_KEY_PREFIX = "contextos-ingest"  # as in functions/ingest/handler.py
QUEUE_ARN = "arn:aws:sqs:us-east-1:000000000000:contextos-ingest"
HOUR = 3600


# -- helpers ---------------------------------------------------------------------------------
@pytest.fixture
def layer(configured) -> PostgresPersistenceLayer:
    """A layer of its own (never the handler's, which Powertools has configured), on the container's pool."""
    return PostgresPersistenceLayer(container.database())


def new_key() -> str:
    return f"tests#{uuid.uuid4().hex}"


def in_progress(key: str, *, expires_in_s: int = HOUR, lock_expires_in_ms: int | None = 60_000) -> DataRecord:
    now = time.time()
    return DataRecord(
        idempotency_key=key,
        status="INPROGRESS",
        expiry_timestamp=int(now) + expires_in_s,
        in_progress_expiry_timestamp=None if lock_expires_in_ms is None else int(now * 1000) + lock_expires_in_ms,
    )


def completed(key: str, response: object, *, expires_in_s: int = HOUR) -> DataRecord:
    return DataRecord(
        idempotency_key=key,
        status="COMPLETED",
        expiry_timestamp=int(time.time()) + expires_in_s,
        response_data=json.dumps(response),
    )


def ingest_records_layer() -> PostgresPersistenceLayer:
    """A layer keyed exactly like the ingest handler's, to look its records up by message id."""
    store = PostgresPersistenceLayer(container.database)
    store.configure(IdempotencyConfig(event_key_jmespath="messageId"), key_prefix=INGEST_KEY_PREFIX)
    return store


def ingest_record(message_id: str) -> DataRecord | None:
    try:
        return ingest_records_layer().get_record({"messageId": message_id})
    except IdempotencyItemNotFoundError:
        return None


def deliver(*messages: tuple[str, str]) -> list[str]:
    """Hand (message id, body) pairs to the ingest function in one SQS batch; return the failed ids.

    When every record fails, Powertools raises instead (Lambda then returns the whole batch).
    """
    event = sqs_event(
        [{"MessageId": mid, "ReceiptHandle": f"rh-{mid}", "Body": body} for mid, body in messages], QUEUE_ARN
    )
    try:
        return [f["itemIdentifier"] for f in invoke("ingest", event)["batchItemFailures"]]
    except BatchProcessingError:
        return [mid for mid, _ in messages]


def job(tenant: str, document_id: str) -> str:
    return json.dumps({"kind": "document", "tenant_id": tenant, "document_id": document_id})


def post_document(tenant: str, text: str) -> str:
    status, accepted = call_api("POST", "/v1/documents", tenant, {"text": text})
    assert status == 202, accepted
    return accepted["id"]


def document_status(tenant: str, document_id: str) -> str:
    return call_api("GET", f"/v1/documents/{document_id}", tenant)[1]["status"]


def items_of(tenant: str, document_id: str) -> int:
    with container.database().tenant_tx(tenant) as conn:
        return conn.execute("SELECT count(*) AS n FROM memory_items WHERE document_id = %s", [document_id]).fetchone()[
            "n"
        ]


NOTES = """# Release notes

Blue-green deployment keeps two identical production environments behind one router.
A canary release sends a small share of traffic to the new version first.
Feature flags let us disable a risky change without a deploy.
"""
OTHER_NOTES = """# Storage notes

Write-ahead logging records every change before the data files are touched.
A checkpoint flushes dirty pages so crash recovery replays less of the log.
"""


# -- the persistence layer -------------------------------------------------------------------
def test_the_first_put_wins_and_a_second_put_is_refused_with_the_stored_record(layer):
    key = new_key()
    first = in_progress(key)
    layer._put_record(first)

    with pytest.raises(IdempotencyItemAlreadyExistsError) as refused:
        layer._put_record(in_progress(key))

    old = refused.value.old_data_record
    assert old is not None
    assert (old.idempotency_key, old.status) == (key, "INPROGRESS")
    assert old.expiry_timestamp == first.expiry_timestamp
    assert old.in_progress_expiry_timestamp == first.in_progress_expiry_timestamp
    stored = layer._get_record(key)
    assert (stored.status, stored.expiry_timestamp) == ("INPROGRESS", first.expiry_timestamp)


def test_getting_a_key_that_was_never_put_raises_not_found(layer):
    with pytest.raises(IdempotencyItemNotFoundError):
        layer._get_record(new_key())


def test_concurrent_puts_of_one_key_have_exactly_one_winner(layer):
    threads_per_key = 6
    for _ in range(4):
        key = new_key()
        barrier = threading.Barrier(threads_per_key)
        outcomes: list[str] = []

        def put(key: str = key, barrier: threading.Barrier = barrier, outcomes: list[str] = outcomes) -> None:
            barrier.wait()
            try:
                layer._put_record(in_progress(key))
                outcomes.append("won")
            except IdempotencyItemAlreadyExistsError as exc:
                assert exc.old_data_record is not None and exc.old_data_record.status == "INPROGRESS"
                outcomes.append("refused")

        threads = [threading.Thread(target=put) for _ in range(threads_per_key)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(outcomes) == ["refused"] * (threads_per_key - 1) + ["won"]


def test_a_put_racing_an_uncommitted_put_waits_for_it_and_then_loses(layer):
    """No read-then-write gap: the second put blocks on the first one's row, then sees it."""
    key = new_key()
    outcome: list[BaseException | None] = []

    def second_put() -> None:
        try:
            layer._put_record(in_progress(key))
            outcome.append(None)
        except IdempotencyItemAlreadyExistsError as exc:
            outcome.append(exc)

    with layer.db.system_tx() as conn:
        conn.execute(
            "INSERT INTO idempotency_records (id, expiration, in_progress_expiration, status)"
            " VALUES (%s, %s, %s, 'INPROGRESS')",
            [key, int(time.time()) + HOUR, int(time.time() * 1000) + 60_000],
        )
        racer = threading.Thread(target=second_put)
        racer.start()
        racer.join(timeout=0.5)
        assert racer.is_alive(), "the second put must wait for the first transaction"
    racer.join(timeout=10)
    assert len(outcome) == 1 and isinstance(outcome[0], IdempotencyItemAlreadyExistsError)
    assert outcome[0].old_data_record is not None and outcome[0].old_data_record.status == "INPROGRESS"


def test_an_expired_record_is_replaced_by_a_new_put(layer):
    key = new_key()
    layer._update_record(completed(key, {"old": True}, expires_in_s=-5))

    fresh = in_progress(key)
    layer._put_record(fresh)

    stored = layer._get_record(key)
    assert stored.status == "INPROGRESS"
    assert stored.expiry_timestamp == fresh.expiry_timestamp
    assert not stored.response_data  # the old result went with the old record


def test_an_in_progress_record_whose_lambda_timed_out_is_taken_over(layer):
    key = new_key()
    layer._put_record(in_progress(key, lock_expires_in_ms=-1_000))

    takeover = in_progress(key, lock_expires_in_ms=30_000)
    layer._put_record(takeover)

    assert layer._get_record(key).in_progress_expiry_timestamp == takeover.in_progress_expiry_timestamp


def test_an_in_progress_record_without_a_deadline_is_not_taken_over(layer):
    key = new_key()
    layer._put_record(in_progress(key, lock_expires_in_ms=None))
    with pytest.raises(IdempotencyItemAlreadyExistsError):
        layer._put_record(in_progress(key))


def test_a_completed_record_refuses_a_put_and_carries_its_saved_result(layer):
    key = new_key()
    layer._put_record(in_progress(key))
    layer._update_record(completed(key, {"answer": 42}))

    with pytest.raises(IdempotencyItemAlreadyExistsError) as refused:
        layer._put_record(in_progress(key))

    old = refused.value.old_data_record
    assert old is not None and old.status == "COMPLETED"
    assert old.response_json_as_dict() == {"answer": 42}


def test_a_deleted_record_frees_its_key(layer):
    key = new_key()
    layer._put_record(in_progress(key))
    layer._delete_record(DataRecord(idempotency_key=key))
    with pytest.raises(IdempotencyItemNotFoundError):
        layer._get_record(key)
    layer._put_record(in_progress(key))


def test_purge_expired_deletes_only_expired_records(layer):
    expired, live = new_key(), new_key()
    layer._update_record(completed(expired, {}, expires_in_s=-10))
    layer._update_record(completed(live, {}))

    assert layer.purge_expired() >= 1

    with pytest.raises(IdempotencyItemNotFoundError):
        layer._get_record(expired)
    assert layer._get_record(live).status == "COMPLETED"


def test_an_idempotent_function_runs_once_and_then_returns_its_saved_result(layer):
    calls: list[dict] = []
    config = IdempotencyConfig(event_key_jmespath="id", payload_validation_jmespath="amount")
    config.register_lambda_context(LocalLambdaContext("tests"))

    @idempotent_function(data_keyword_argument="order", persistence_store=layer, config=config, key_prefix=new_key())
    def charge(order: dict) -> dict:
        calls.append(order)
        return {"charged": order["amount"]}

    order_id = uuid.uuid4().hex
    assert charge(order={"id": order_id, "amount": 5}) == {"charged": 5}
    assert charge(order={"id": order_id, "amount": 5}) == {"charged": 5}
    assert len(calls) == 1
    with pytest.raises(IdempotencyValidationError):
        charge(order={"id": order_id, "amount": 6})  # same key, another payload: refused
    assert len(calls) == 1


# -- the ingest handler ----------------------------------------------------------------------
def test_a_message_delivered_twice_is_processed_once(configured, tenant, drain_ingest_queue):
    document_id = post_document(tenant, NOTES)
    message_id, body = str(uuid.uuid4()), job(tenant, document_id)

    assert deliver((message_id, body)) == []
    record = ingest_record(message_id)
    assert record is not None and record.status == "COMPLETED"
    assert record.response_json_as_dict()["messageId"] == message_id
    items = items_of(tenant, document_id)
    assert document_status(tenant, document_id) == "done" and items >= 1

    assert deliver((message_id, body)) == []
    assert items_of(tenant, document_id) == items
    again = ingest_record(message_id)
    assert again is not None
    assert (again.status, again.expiry_timestamp) == ("COMPLETED", record.expiry_timestamp)


def test_a_redelivered_message_id_gets_the_saved_result_without_the_service_running(
    configured, tenant, drain_ingest_queue
):
    """The ingest service would process a queued document; only the idempotency record stops it."""
    first_doc = post_document(tenant, NOTES)
    message_id = str(uuid.uuid4())
    assert deliver((message_id, job(tenant, first_doc))) == []
    saved = ingest_record(message_id)
    assert saved is not None

    second_doc = post_document(tenant, OTHER_NOTES)
    assert deliver((message_id, job(tenant, second_doc))) == []
    assert document_status(tenant, second_doc) == "queued"
    assert deliver((message_id, "{not json")) == []  # would fail if it were parsed

    again = ingest_record(message_id)
    assert again is not None and again.response_data == saved.response_data

    assert deliver((str(uuid.uuid4()), job(tenant, second_doc))) == []  # under its own id it runs
    assert document_status(tenant, second_doc) == "done"


def test_a_failing_message_leaves_no_record_so_its_retry_runs(configured, tenant, drain_ingest_queue):
    message_id = str(uuid.uuid4())
    assert deliver((message_id, "{not json")) == [message_id]
    assert ingest_record(message_id) is None
    assert deliver((message_id, "{not json")) == [message_id]  # run again, not answered from a record
    assert ingest_record(message_id) is None

    document_id = post_document(tenant, NOTES)
    assert deliver((message_id, job(tenant, document_id))) == []
    assert document_status(tenant, document_id) == "done"
    record = ingest_record(message_id)
    assert record is not None and record.status == "COMPLETED"


def test_a_message_held_by_another_consumer_waits_until_that_consumer_times_out(configured, tenant, drain_ingest_queue):
    document_id = post_document(tenant, NOTES)
    message_id, body = str(uuid.uuid4()), job(tenant, document_id)
    ingest_records_layer().save_inprogress({"messageId": message_id}, remaining_time_in_millis=60_000)

    assert deliver((message_id, body)) == [message_id]  # already in progress: the queue retries it
    assert document_status(tenant, document_id) == "queued"

    held = ingest_record(message_id)
    assert held is not None and held.status == "INPROGRESS"
    with container.database().system_tx() as conn:  # the other consumer's Lambda deadline passes
        conn.execute(
            "UPDATE idempotency_records SET in_progress_expiration = %s WHERE id = %s",
            [int(time.time() * 1000) - 1_000, held.idempotency_key],
        )

    assert deliver((message_id, body)) == []
    assert document_status(tenant, document_id) == "done"
    record = ingest_record(message_id)
    assert record is not None and record.status == "COMPLETED"


def test_one_s3_upload_notified_under_two_message_ids_is_ingested_once(
    configured, tenant, s3, local_aws, drain_ingest_queue
):
    """Different message ids pass idempotency; the tenant's content hash catches the duplicate."""
    key = f"uploads/{tenant}/notes.md"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=key, Body=NOTES.encode())
    sample = json.loads((REPO / "events" / "ingest__sqs_s3_upload.json").read_text())
    notification = json.loads(sample["Records"][0]["body"])
    notification["Records"][0]["s3"]["bucket"]["name"] = local_aws.upload_bucket
    notification["Records"][0]["s3"]["object"]["key"] = key
    body = json.dumps(notification)
    first_id, second_id = str(uuid.uuid4()), str(uuid.uuid4())

    assert deliver((first_id, body)) == []
    with container.database().tenant_tx(tenant) as conn:
        documents = conn.execute("SELECT id, status FROM documents").fetchall()
    assert [d["status"] for d in documents] == ["done"]
    items = items_of(tenant, documents[0]["id"])

    assert deliver((second_id, body)) == []
    with container.database().tenant_tx(tenant) as conn:
        assert conn.execute("SELECT count(*) AS n FROM documents").fetchone()["n"] == 1
    assert items_of(tenant, documents[0]["id"]) == items
    assert all(ingest_record(m) is not None for m in (first_id, second_id))
