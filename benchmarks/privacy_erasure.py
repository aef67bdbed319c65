"""Erasure residue (S3): plant content for two users of a tenant through the API (inline and S3
documents, a presigned upload, turns, manual memories, a held candidate, a cold object), erase
one user scope, scan every table of the database and every object of both buckets for what was
erased, then erase the whole tenant and scan again; the audit chain must still verify.

``measure()`` returns the figures (part of ``benchmarks/privacy.py``'s report); run alone,
``python -m benchmarks.privacy_erasure`` writes ``benchmarks/reports/privacy_erasure.{json,md}``.
A real embedded PostgreSQL and an in-process moto server unless the caller passes its own.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from typing import Any

from benchmarks.report import write_report


def _environment(database_url: str, aws: Any) -> dict[str, str]:
    return {
        "CONTEXTOS_DATABASE_URL": database_url,
        "CONTEXTOS_INGEST_QUEUE_URL": aws.ingest_queue_url,
        "CONTEXTOS_CONVERSATION_QUEUE_URL": aws.conversation_queue_url,
        "CONTEXTOS_UPLOAD_BUCKET": aws.upload_bucket,
        "CONTEXTOS_COLD_BUCKET": aws.cold_bucket,
        "POWERTOOLS_SERVICE_NAME": "contextos-bench",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }


def measure(database_url: str | None = None, aws: Any = None, *, users: int = 3) -> dict:
    """Plant ``users`` users' content in one tenant; erase the first user, then the tenant."""
    import boto3
    from contextos import container
    from contextos.local.aws import start_local_aws
    from contextos.store.dialect import get_dialect
    from contextos.store.embedded import embedded_database_url
    from contextos.store.migrate import migrate

    from tests.helpers import call_api
    from tests.integration.test_erasure import plant
    from tests.residue import scan

    started_aws = aws is None
    if database_url is None:
        database_url = embedded_database_url(tempfile.mkdtemp(prefix="privacy-erasure-"))
        migrate(database_url, get_dialect("postgres"), 384, "local:all-MiniLM-L6-v2-int8")
    if aws is None:
        aws = start_local_aws(
            region="us-east-1",
            upload_bucket="erasure-uploads",
            cold_bucket="erasure-cold",
            upload_prefix="uploads/",
            queue_prefix=f"erasure-{uuid.uuid4().hex[:6]}",
            visibility_timeout_s=1,
        )
    saved = dict(os.environ)
    os.environ.update(_environment(database_url, aws))
    container.reset()
    try:
        s3 = boto3.client("s3", region_name="us-east-1", endpoint_url=aws.endpoint)
        sqs = boto3.client("sqs", region_name="us-east-1", endpoint_url=aws.endpoint)
        tenant = f"t-erasure-{uuid.uuid4().hex[:8]}"
        needles = {f"user-{i}": plant(tenant, f"user-{i}", s3, aws, sqs) for i in range(users)}
        buckets = [aws.upload_bucket, aws.cold_bucket]

        def residue(words: list[str]) -> int:
            return len(scan(words, database_url=database_url, s3=s3, buckets=buckets))

        planted_found = residue([w for ws in needles.values() for w in ws])
        t0, c0 = time.perf_counter(), time.process_time()
        status, user_report = call_api("POST", "/v1/erasure/user", tenant, {"user_id": "user-0"})
        user_ms, user_cpu_ms = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
        assert status == 200, user_report
        user_residue = residue(needles["user-0"])
        others_kept = residue([w for u, ws in needles.items() if u != "user-0" for w in ws])
        user_chain = container.governance().verify(tenant)

        t0, c0 = time.perf_counter(), time.process_time()
        status, tenant_report = call_api("POST", "/v1/erasure/tenant", tenant, {"confirm": tenant})
        tenant_ms, tenant_cpu_ms = (time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000
        assert status == 200, tenant_report
        tenant_residue = residue([w for ws in needles.values() for w in ws])
        tenant_chain = container.governance().verify(tenant)
        return {
            "erasure_residue": user_residue + tenant_residue,
            "audit_chain_verifies": bool(user_chain.ok and tenant_chain.ok),
            "erasure_residue_user_scope": user_residue,
            "erasure_residue_tenant": tenant_residue,
            "erasure_needles": sum(len(ws) for ws in needles.values()),
            "erasure_needles_found_before": planted_found,
            "erasure_other_users_hits_kept": others_kept,
            "erasure_user_rows": sum(user_report["counts"].values()),
            "erasure_user_objects": user_report["objects_deleted"],
            "erasure_tenant_rows": sum(tenant_report["counts"].values()),
            "erasure_tenant_objects": tenant_report["objects_deleted"],
            "erasure_user_ms": round(user_ms, 1),
            "erasure_user_client_cpu_ms": round(user_cpu_ms, 1),
            "erasure_tenant_ms": round(tenant_ms, 1),
            "erasure_tenant_client_cpu_ms": round(tenant_cpu_ms, 1),
            "audit_entries_after": tenant_chain.entries,
            "loadavg": [round(x, 2) for x in os.getloadavg()],
        }
    finally:
        os.environ.clear()
        os.environ.update(saved)
        container.reset()
        if started_aws:
            aws.stop()


def main() -> None:
    figures = measure()
    path = write_report(
        "privacy_erasure",
        figures,
        title="Erasure residue: a user scope and a whole tenant",
        notes=[
            "Needles are made-up words planted in documents (inline, S3 source, presigned upload), turns, "
            "manual memories, a held candidate and a cold object, for each user of one tenant.",
            "The residue scanner (tests/residue.py) searches every text column of every table (all tenants, "
            "owner connection) and every object of the upload and cold buckets, case-folded.",
            "erasure_needles_found_before > 0 and erasure_other_users_hits_kept > 0 show the scan finds what is there.",
            "Times include the local API handler; the database's own CPU is not in the client figures.",
        ],
    )
    print(path.read_text())


if __name__ == "__main__":
    main()
