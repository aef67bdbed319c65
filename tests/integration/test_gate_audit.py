"""A document that restates memories already held: every gate outcome is audited once, in one
statement, whatever mix of merges, corroborations and supersessions it brings."""

from contextos import container

from tests.helpers import call_api, run_queue

BREAKER = (
    "# Console incident review\n\nThe circuit breaker opens after five failed calls. "
    "A circuit breaker protects the payment service from cascading failures.\n"
)


def test_a_restating_document_is_ingested_and_audited(configured, tenant, sqs, local_aws, drain_ingest_queue):
    call_api("POST", "/v1/documents", tenant, {"text": BREAKER, "filename": "incident.md"})
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, second = call_api(
        "POST", "/v1/documents", tenant, {"text": BREAKER.replace("Console incident review", "Payments")}
    )
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    _, doc = call_api("GET", f"/v1/documents/{second['id']}", tenant)
    assert doc["status"] == "done", doc
    assert container.governance().verify(tenant).ok
