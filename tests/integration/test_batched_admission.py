"""An ingest queue batch's documents are admitted in one transaction (one tenant lock, one commit),
and the outcome is exactly what admitting them one by one gives: the same memories, merges,
supersessions, edges, items, review queue, audit entries and document counts. One bad document
never costs the others: the batch falls back to one by one."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from contextos import container
from contextos.current_settings import get_settings
from contextos.local.events import sqs_event
from contextos.local.handlers import invoke
from contextos.models import Concept, DocumentJob, Provenance
from contextos.services.admission import Admission
from contextos.sources import DocumentSource

# Each document's concepts, in ingestion order: key merges, an acronym merge, a same-subject
# contradiction (the newer timeout supersedes), a different-subject statement of the same shape
# (never superseded), and a document whose provenance keeps every candidate out (held).
DOCUMENTS: list[tuple[str, list[Concept]]] = [
    (
        "user_upload",
        [
            Concept(
                label="Deploy timeout",
                definition="The deploy timeout is 30 seconds for every service.",
                related=["Blue-green deployment"],
            ),
            Concept(
                label="Blue-green deployment",
                definition="Blue-green deployment keeps two identical production environments behind one router.",
                type="decision",
                importance=7,
            ),
            Concept(
                label="Group Relative Policy Optimization",
                definition="Group Relative Policy Optimization (GRPO) trains a policy against a group's mean reward.",
                type="entity",
            ),
        ],
    ),
    (
        "user_upload",
        [
            Concept(
                label="Search service timeout",
                definition="The search service times out after 60 seconds when the index is rebuilding.",
            ),
            Concept(
                label="Blue green deployment",
                definition="Blue-green deployment makes a rollback fast: the router switches back to the old side.",
                type="decision",
                importance=8,
                related=["Canary release"],
            ),
            Concept(
                label="Canary release",
                definition="A canary release sends a small share of traffic to the new version before the rest.",
                type="decision",
            ),
        ],
    ),
    (
        "web_content",
        [
            Concept(
                label="Vendor pricing page",
                definition="The vendor's pricing page lists three plans with monthly and yearly billing options.",
            ),
        ],
    ),
    (
        "user_upload",
        [
            Concept(
                label="Deploy timeout",
                definition="The deploy timeout is 90 seconds for every service.",
            ),
            Concept(
                label="GRPO",
                definition="GRPO compares each sampled answer with the other answers of its group to score it.",
                type="entity",
            ),
        ],
    ),
    (
        "user_upload",
        [
            Concept(
                label="Canary release",
                definition="A canary release sends a small share of traffic to the new version before the rest.",
                type="decision",
                related=["Feature flags"],
            ),
            Concept(
                label="Feature flags",
                definition="Feature flags let a team disable a risky change without a new deployment.",
                type="decision",
            ),
        ],
    ),
]


def create_documents(tenant: str) -> list[uuid.UUID]:
    store = container.stores()
    ids = []
    for i, (provenance, _) in enumerate(DOCUMENTS):
        record, _ = store.documents.create_document(
            tenant,
            content_hash=f"doc-{i}",
            filename=f"doc-{i}.md",
            content_type="text/markdown",
            provenance=provenance,
            size_bytes=1,
        )
        ids.append(record.id)
    return ids


def prepared(admission: Admission, tenant: str, ids: list[uuid.UUID]) -> list:
    return [
        admission.prepare(
            tenant,
            concepts,
            DocumentSource(document_id=doc_id, provenance=Provenance(provenance), counts={"extracted": len(concepts)}),
        )
        for doc_id, (provenance, concepts) in zip(ids, DOCUMENTS, strict=True)
    ]


def snapshot(tenant: str) -> dict[str, Any]:
    """Everything an admission writes, with ids replaced by what they name (memories by label,
    documents by filename) and clock-dependent values dropped, in a stable order."""
    tables = {
        "memories": "SELECT * FROM memories",
        "vectors": "SELECT memory_id, type, searchable, embedder_id FROM memory_vectors",
        "edges": "SELECT * FROM relationships",
        "items": "SELECT * FROM memory_items",
        "review": "SELECT * FROM review_queue",
        "audit": "SELECT * FROM audit_log ORDER BY chain_seq",
        "documents": "SELECT id, filename, status, error, counts FROM documents",
        "tenant": "SELECT hot_memories FROM tenants",
    }
    with container.database().tenant_tx(tenant) as conn:
        rows = {name: conn.execute(sql).fetchall() for name, sql in tables.items()}
    names = {r["id"]: f"memory:{r['label']}" for r in rows["memories"]}
    names |= {r["id"]: f"document:{r['filename']}" for r in rows["documents"]}
    # a common noun's key names its document by id: by filename here, as the other ids are
    marks = {f"#d={r['id'].hex}": f"#d=<{r['filename']}>" for r in rows["documents"]}

    def clean(value: Any) -> Any:
        match value:
            case uuid.UUID():
                return names.get(value, "other-id")
            case str() if len(value) == 36 and value.count("-") == 4:
                return names.get(uuid.UUID(value), "other-id")
            case str() if "#d=" in value:
                return " ".join(marks.get(word, word) for word in value.split(" "))
            case dict():
                return {k: clean(v) for k, v in value.items() if not _volatile(k)}
            case list():
                return [clean(v) for v in value]
            case float():
                return round(value, 6)
            case datetime():
                return "time"
            case _:
                return value

    out = {}
    for name, table in rows.items():
        cleaned = [clean(dict(r)) for r in table]
        out[name] = cleaned if name == "audit" else sorted(cleaned, key=lambda r: json.dumps(r, sort_keys=True))
    return out


def _volatile(column: str) -> bool:
    """Columns whose value depends on the clock or on the order of unrelated rows, not on the outcome."""
    return (
        column in ("tenant_id", "seq", "ingest_seq", "chain_seq", "valid_from", "valid_to", "strength_anchor_at")
        or column.endswith("_at")
        or "hash" in column
    )


def test_a_batch_admitted_in_one_transaction_equals_admitting_its_documents_one_by_one(configured):
    settings = get_settings()
    admission = Admission(settings=settings, store=container.admission_store(), embedder=container.embedder())
    batched, single = f"t-batch-{uuid.uuid4().hex[:8]}", f"t-single-{uuid.uuid4().hex[:8]}"

    batched_ids = create_documents(batched)
    results = admission.store_documents(batched, prepared(admission, batched, batched_ids))
    single_ids = create_documents(single)
    alone = [admission.store_prepared(single, p) for p in prepared(admission, single, single_ids)]

    a, b = snapshot(batched), snapshot(single)
    assert a == b

    def counts(r):
        return (r.stored.created, r.stored.merged, r.stored.items, r.stored.edges, len(r.stored.memory_ids), r.report)

    assert [counts(r) for r in results] == [counts(r) for r in alone]
    # What makes the comparison mean something: the batch merged, superseded and held.
    states = {m["definition"]: m["state"] for m in a["memories"]}
    assert states["The deploy timeout is 30 seconds for every service."] == "superseded"
    assert states["The deploy timeout is 90 seconds for every service."] == "active"
    assert states["The search service times out after 60 seconds when the index is rebuilding."] == "active"
    assert {(e["type"], e["src_id"], e["dst_id"]) for e in a["edges"] if e["type"] == "supersedes"} == {
        ("supersedes", "memory:Deploy timeout", "memory:Deploy timeout")
    }
    assert {m["label"] for m in a["memories"]} >= {"Blue-green deployment", "Group Relative Policy Optimization"}
    # GRPO (acronym) and canary release (restated word for word); the two documents' blue-green say
    # different things of a common noun, so each keeps its own (#41)
    assert sum(r.stored.merged for r in results) >= 2
    assert [r["candidate"]["label"] for r in a["review"]] == ["Vendor pricing page"]
    assert {d["status"] for d in a["documents"]} == {"done"}
    # ... and it was one transaction: every document finished at the same transaction time.
    with container.database().tenant_tx(batched) as conn:
        finished = {r["updated_at"] for r in conn.execute("SELECT updated_at FROM documents")}
    assert len(finished) == 1


RUNBOOK = """# Deployment runbook {n}

Blue-green deployment keeps two identical production environments. The router sends all traffic to one of them.
A canary release sends a small share of traffic to the new version first. Canary release catches regressions early.
We decided to use feature flags for risky changes in service {n}. Feature flags let us disable a change quickly.
"""


def post(tenant: str, text: str) -> str:
    record, _ = container.stores().documents.create_document(
        tenant,
        content_hash=uuid.uuid4().hex,
        filename="runbook.md",
        content_type="text/markdown",
        provenance="user_upload",
        size_bytes=len(text),
        raw_text=text,
    )
    return str(record.id)


def job_message(tenant: str, document_id: str, n: int) -> dict:
    body = json.dumps({"kind": "document", "tenant_id": tenant, "document_id": document_id})
    return {"MessageId": f"m-{uuid.uuid4().hex[:8]}-{n}", "ReceiptHandle": f"r{n}", "Body": body}


def test_an_sqs_batch_of_one_tenant_is_admitted_in_one_transaction_and_each_document_reports(configured, tenant):
    ids = [post(tenant, RUNBOOK.format(n=n)) for n in range(3)]
    messages = [job_message(tenant, doc_id, n) for n, doc_id in enumerate(ids)]
    poison = {"MessageId": "poison", "ReceiptHandle": "rp", "Body": "{not json"}
    result = invoke("ingest", sqs_event([*messages, poison], "arn:aws:sqs:us-east-1:000000000000:q"))
    assert [f["itemIdentifier"] for f in result["batchItemFailures"]] == ["poison"]
    store = container.stores()
    docs = [store.documents.get_document(tenant, uuid.UUID(i)) for i in ids]
    assert {d.status for d in docs} == {"done"} and all(d.counts["accepted"] > 0 for d in docs)
    with container.database().tenant_tx(tenant) as conn:
        finished = {r["updated_at"] for r in conn.execute("SELECT updated_at FROM documents")}
        items = conn.execute("SELECT count(DISTINCT document_id) AS n FROM memory_items").fetchone()
    assert len(finished) == 1 and items["n"] == 3  # one transaction, and every document has its items


def test_when_one_document_fails_in_the_batch_the_others_are_admitted_one_by_one(configured, tenant, monkeypatch):
    ids = [post(tenant, RUNBOOK.format(n=n)) for n in range(3)]
    store = container.stores()
    real = store.admission._finish_source
    bad = uuid.UUID(ids[1])

    def finish(conn, tenant_id, source, counts):  # one document's own bookkeeping breaks
        if getattr(source, "document_id", None) == bad:
            raise RuntimeError("the database rejected this document's row")
        real(conn, tenant_id, source, counts)

    monkeypatch.setattr(store.admission, "_finish_source", finish)
    service = container.ingestion().pipeline  # admits through the container's admission store: the one patched
    outcomes = service.process_jobs([DocumentJob(tenant_id=tenant, document_id=uuid.UUID(i)) for i in ids])
    assert outcomes[0] is None and outcomes[2] is None
    assert outcomes[1] is not None  # transient for the queue: it retries this one alone
    docs = [store.documents.get_document(tenant, uuid.UUID(i)) for i in ids]
    assert [d.status for d in docs] == ["done", "queued", "done"]
    with container.database().tenant_tx(tenant) as conn:
        sources = {r["document_id"] for r in conn.execute("SELECT DISTINCT document_id FROM memory_items")}
        finished = {r["updated_at"] for r in conn.execute("SELECT updated_at FROM documents WHERE status = 'done'")}
    assert sources == {uuid.UUID(ids[0]), uuid.UUID(ids[2])}
    assert len(finished) == 2  # admitted one by one after the batch rolled back
