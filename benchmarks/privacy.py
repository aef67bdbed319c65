"""Privacy benchmark (S7 "What never gets in"): does a planted secret or personal datum ever get
stored, and what does the firewall cost ordinary documents?

1. ``planted_values_leaked``: synthetic, checksum-valid values (``benchmarks/privacy_fixtures``)
   put in through every way in on the real services — an embedded PostgreSQL + pgvector, moto's
   S3 and SQS, the real API and queue handlers: documents of every format (PDF, DOCX, HTML,
   Markdown, code) by ``POST /v1/documents``, files dropped into the upload bucket, conversation
   turns (then flushed), manual memories, MCP ``save_memory`` and workspace imports — then
   searched verbatim (case-folded) with ``tests/residue.py`` in every column of every table
   (the audit log included), every object of the buckets, a workspace export folder and archive,
   and the logs captured during the run.
2. ``facts_kept_rate``: the non-secret fact of each planted document still answers its question
   through ``/v1/context``.
3. ``false_redaction_rate``: the redactor over real third-party Debian documents
   (``benchmarks/privacy_corpus``): a document counts when something other than an email was
   redacted (every such finding is listed; emails there are real people's and count as found).
4. ``redaction_ms_per_doc``: CPU time of the redaction step per document (benign corpus, and the
   e2e ingest benchmark's documents, whose figure is also written beside ``ingest.json``).
5. ``erasure_residue``: ``benchmarks.privacy_erasure.measure()`` when that module is present.

Run: ``.venv/bin/python -m benchmarks.privacy`` (installs the corpus' Debian packages if missing).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import logging
import os
import random
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.privacy_corpus import corpus
from benchmarks.privacy_fixtures import KINDS, Planted, planted
from benchmarks.report import REPORTS, write_report

PER_KIND = 20  # 19 kinds x 20 = 380 planted values
TEAMS = [
    "orion",
    "falcon",
    "kestrel",
    "juniper",
    "basalt",
    "cobalt",
    "heron",
    "lynx",
    "marten",
    "nimbus",
    "onyx",
    "pollux",
    "quasar",
    "raven",
    "sable",
    "tundra",
    "umber",
    "vega",
    "willow",
    "xenon",
    "yarrow",
    "zephyr",
    "argon",
    "birch",
    "cedar",
    "dune",
    "ember",
    "fjord",
    "garnet",
    "hazel",
    "iris",
    "jasper",
    "krypton",
    "larch",
    "maple",
    "nova",
    "opal",
    "pike",
    "quill",
    "rowan",
    "sorrel",
    "thistle",
    "ursa",
    "vireo",
    "wren",
    "alder",
    "bramble",
    "cypress",
    "dahlia",
    "elm",
]  # fmt: skip  (one per fact: a name said twice with two days is an update, not two facts)
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]


@dataclass
class Fact:
    question: str
    answer: str
    way_in: str


@dataclass
class Plan:
    values: list[Planted] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    by_way_in: Counter = field(default_factory=Counter)


def fact_sentence(team: str, day: str) -> tuple[str, Fact]:
    return (
        f"The {team.title()} service is released every {day} after the change review.",
        Fact(f"When is the {team.title()} service released?", day, ""),
    )


# ------------------------------------------------------------------ the planted run


def start_stack(tmp: Path):
    from contextos import container
    from contextos.local.aws import start_local_aws
    from contextos.store.dialect import get_dialect
    from contextos.store.embedded import embedded_database_url
    from contextos.store.migrate import migrate

    url = embedded_database_url(tmp / "pg")
    migrate(url, get_dialect("postgres"), 384, "local:all-MiniLM-L6-v2-int8")
    aws = start_local_aws(
        region="us-east-1",
        upload_bucket="contextos-uploads",
        cold_bucket="contextos-cold",
        upload_prefix="uploads/",
        queue_prefix="privacy",
        visibility_timeout_s=1,
    )
    os.environ.update(
        CONTEXTOS_DATABASE_URL=url,
        CONTEXTOS_INGEST_QUEUE_URL=aws.ingest_queue_url,
        CONTEXTOS_CONVERSATION_QUEUE_URL=aws.conversation_queue_url,
        CONTEXTOS_UPLOAD_BUCKET=aws.upload_bucket,
        CONTEXTOS_COLD_BUCKET=aws.cold_bucket,
    )
    container.reset()
    return url, aws


def capture_logs() -> io.StringIO:
    """Every log record of the run (ours through Powertools' JSON formatter, and every library's)."""
    from contextos.observability import logger

    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    handler.setLevel(logging.DEBUG)
    ours = logging.getLogger(logger.name)
    if ours.handlers:
        handler.setFormatter(ours.handlers[0].formatter)
    ours.addHandler(handler)
    ours.setLevel(logging.DEBUG)
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)  # botocore's DEBUG logs print request bodies: not our logs
    return buffer


def document_bytes(fmt: str, title: str, lines: list[str]) -> tuple[dict, str]:
    """A document of one format: the API body and its file name."""
    if fmt == "md":
        return {"text": f"# {title}\n\n" + "\n\n".join(lines) + "\n"}, f"{title}.md"
    if fmt == "html":
        body = "".join(f"<p>{line}</p>" if "\n" not in line else f"<pre>{line}</pre>" for line in lines)
        return {"text": f"<html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"}, (
            f"{title}.html"
        )
    if fmt == "py":
        text = f'"""{title}."""\n\n' + "\n".join(
            f"# {line}" if "\n" not in line else f'KEY = """{line}"""' for line in lines
        )
        return {"text": text + "\n"}, f"{title.replace(' ', '_')}.py"
    if fmt == "docx":
        import docx

        document = docx.Document()
        document.add_heading(title, 1)
        for line in lines:
            document.add_paragraph(line)
        out = io.BytesIO()
        document.save(out)
        return {"content_base64": base64.b64encode(out.getvalue()).decode()}, f"{title}.docx"
    if fmt == "pdf":
        from tests.hostile import pdf_with_pages

        pages = [title, *(line.replace("\n", " ") for line in lines)]
        return {"content_base64": base64.b64encode(pdf_with_pages(*pages)).decode()}, f"{title}.pdf"
    raise ValueError(fmt)


def planted_run(tmp: Path) -> dict:
    from contextos import container
    from contextos.mcp.backend import Caller
    from contextos.mcp.run import local_backend
    from contextos.mcp.server import build_server
    from mcp.client.client import Client

    from tests.helpers import call_api, run_queue
    from tests.residue import scan, scan_blob

    url, aws = start_stack(tmp)
    logs = capture_logs()
    s3, sqs = container.aws_client("s3"), container.aws_client("sqs")
    tenant = "t-privacy-bench"
    values = list(planted(PER_KIND * len(KINDS)))
    rng = random.Random(5)
    rng.shuffle(values)
    plan = Plan(values=values)
    stream = iter(values)
    teams = iter(TEAMS)

    def take(n: int, way_in: str) -> list[Planted]:
        out = [next(stream) for _ in range(n)]
        plan.by_way_in[way_in] += len(out)
        return out

    def fact(way_in: str) -> str:
        sentence, f = fact_sentence(next(teams), rng.choice(DAYS))
        f.way_in = way_in
        plan.facts.append(f)
        return sentence

    started = time.perf_counter()
    # documents of every format through the API: 5 formats x 6 documents x 5 values
    for fmt in ("md", "html", "py", "docx", "pdf"):
        for n in range(6):
            lines = [fact(f"document:{fmt}"), *(p.sentence for p in take(5, f"document:{fmt}"))]
            body, name = document_bytes(fmt, f"{fmt} notes {n}", lines)
            status, answer = call_api("POST", "/v1/documents", tenant, body | {"filename": name})
            assert status == 202, answer
    # files dropped into the upload bucket: 8 x 5 values
    for n in range(8):
        lines = [fact("upload"), *(p.sentence for p in take(5, "upload"))]
        s3.put_object(
            Bucket=aws.upload_bucket, Key=f"uploads/{tenant}/dropped-{n}.md", Body="\n\n".join(lines).encode()
        )
    while run_queue(sqs, aws.ingest_queue_url, aws.ingest_queue_arn, rounds=10):
        pass
    # conversation turns: 6 sessions x 10 turns, one value each, then flushed
    for n in range(6):
        for i, p in enumerate(take(10, "turn")):
            text = f"{fact('turn') if i == 0 else 'Noted.'} {p.sentence}"
            status, answer = call_api(
                "POST", f"/v1/sessions/chat-{n}/messages", tenant, {"role": "user", "content": text}
            )
            assert status == 201, answer
        call_api("POST", f"/v1/sessions/chat-{n}/end", tenant)
    run_queue(sqs, aws.conversation_queue_url, aws.conversation_queue_arn, "conversation", rounds=10)
    # manual memories: 50, a fifth of them with the value in the label too
    for i, p in enumerate(take(50, "memory")):
        label = f"Credential note {i} {p.value}" if i % 5 == 0 else f"Credential note {i}"
        status, answer = call_api("POST", "/v1/memories", tenant, {"label": label, "definition": p.sentence})
        assert status in (201, 202), answer
    # MCP save_memory: 40
    server = build_server(local_backend(Caller(tenant_id=tenant, subject="privacy-bench")))
    mcp_values = take(40, "mcp")

    async def save_all() -> None:
        async with Client(server, raise_exceptions=False) as client:
            for i, p in enumerate(mcp_values):
                result = await client.call_tool("save_memory", {"label": f"Agent note {i}", "definition": p.sentence})
                assert not result.is_error, result.content

    asyncio.run(save_all())
    # workspace import: the rest, one file each
    rest = list(stream)
    plan.by_way_in["import"] += len(rest)
    files = [
        {
            "path": f"05-resources/imported-{i}.md",
            "content": f"---\ntype: fact\nl0: Imported note {i}\n---\n{p.sentence}\n",
        }
        for i, p in enumerate(rest)
    ]
    status, report = call_api("POST", "/v1/import", tenant, {"files": files})
    assert status == 200, report
    ingest_s = time.perf_counter() - started

    # the facts, through the read path
    kept = []
    for f in plan.facts:
        status, context = call_api("POST", "/v1/context", tenant, {"query": f.question, "dry_run": True})
        kept.append(status == 200 and f.answer.lower() in json.dumps(context).lower())
    facts_by_way_in: dict[str, list[bool]] = {}
    for f, ok in zip(plan.facts, kept, strict=True):
        facts_by_way_in.setdefault(f.way_in.split(":")[0], []).append(ok)

    # the scan: every table, every object, an export folder and archive, the captured logs
    export_dir = tmp / "export"
    container.workspace().export_dir(tenant, export_dir)
    archive = b"".join(container.workspace().archive(tenant))
    needles = [p.value for p in values]
    settings = container.get_settings()
    buckets = sorted({aws.upload_bucket, aws.cold_bucket, settings.raw_bucket_name})
    hits = scan(needles, database_url=url, s3=s3, buckets=buckets, paths=[export_dir], logs={"run": logs.getvalue()})
    hits += scan_blob("export:archive", "workspace.tar.gz", archive, needles)
    kind_of = {p.value: p.kind for p in values}
    with container.database().tenant_tx(tenant) as conn:
        documents = conn.execute("SELECT status, error, counts FROM documents").fetchall()
        audit = conn.execute("SELECT action, count(*) AS n FROM audit_log GROUP BY action").fetchall()
        memories = conn.execute("SELECT count(*) AS n FROM memories").fetchone()["n"]
        labels = [r["label"] for r in conn.execute("SELECT label FROM memories").fetchall()]
    redacted_by_documents = Counter()
    for d in documents:
        redacted_by_documents.update((d["counts"] or {}).get("redactions") or {})
    aws.stop()
    container.reset()
    return {
        "planted_values": len(values),
        "planted_kinds": len({p.kind for p in values}),
        "planted_by_kind": dict(sorted(Counter(p.kind for p in values).items())),
        "planted_by_way_in": dict(sorted(plan.by_way_in.items())),
        "planted_values_leaked": len({h.needle for h in hits}),
        "leaks": [
            {"kind": kind_of[h.needle], "where": h.where, "field": h.field, "key": h.key}
            for h in sorted(hits, key=lambda h: (h.where, h.field))
        ][:100],
        "facts": len(kept),
        "facts_kept": sum(kept),
        "facts_kept_rate": round(sum(kept) / len(kept), 4),
        "facts_kept_by_way_in": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(facts_by_way_in.items())},
        "facts_missed": [f.question for f, ok in zip(plan.facts, kept, strict=True) if not ok],
        "documents": len(documents),
        "documents_not_done": [d["error"] for d in documents if d["status"] != "done"],
        "document_redaction_counts": dict(sorted(redacted_by_documents.items())),
        "audit_actions": {r["action"]: r["n"] for r in audit},
        "memories": memories,
        "labels_with_placeholders": sum(1 for label in labels if "[secret:" in label or "[pii:" in label),
        "planted_ingest_wall_s": round(ingest_s, 1),
    }


# ------------------------------------------------------------------ the benign corpus


def benign_run() -> dict:
    from contextos.redaction import findings

    docs = corpus()
    findings("warm up the detectors' imports")  # the first call imports the libraries
    found: Counter = Counter()
    false_positives = []
    flagged: set[str] = set()
    cpu = time.process_time()
    per_doc = [findings(d.text) for d in docs]
    cpu = time.process_time() - cpu
    for doc, spans in zip(docs, per_doc, strict=True):
        for f in spans:
            found[f.kind] += 1
            if f.kind != "pii:email":
                flagged.add(doc.path)
                false_positives.append({"path": doc.path, "kind": f.kind, "text": doc.text[f.start : f.end][:80]})
    chars = sum(len(d.text) for d in docs)
    return {
        "benign_documents": len(docs),
        "benign_packages": len({d.package for d in docs}),
        "benign_chars": chars,
        "false_redaction_documents": len(flagged),
        "false_redaction_rate": round(len(flagged) / len(docs), 4),
        "false_positives": false_positives,
        "benign_found_by_kind": dict(sorted(found.items())),
        "redaction_ms_per_doc": round(1000 * cpu / len(docs), 3),
        "redaction_ms_per_10k_chars": round(1000 * cpu / chars * 10_000, 3),
    }


def ingest_docs_cost() -> dict:
    """The redaction step on the e2e ingest benchmark's own documents, beside its per-document CPU."""
    from contextos.redaction import redact

    from benchmarks.ingest import synthetic_document

    rng = random.Random(5)
    texts = [synthetic_document(rng, n) for n in range(200)]
    redact(texts[0])
    cpu = time.process_time()
    for t in texts:
        redact(t)
    ms = 1000 * (time.process_time() - cpu) / len(texts)
    path = REPORTS / "ingest.json"
    share = None
    if path.exists():
        report = json.loads(path.read_text())
        workers_ms = (report.get("e2e_cpu_per_doc") or {}).get("workers_ms_per_doc")
        share = round(ms / workers_ms, 4) if workers_ms else None
        report["redaction_ms_per_doc"] = round(ms, 3)
        report["redaction_share_of_e2e_worker_cpu"] = share
        path.write_text(json.dumps(report, indent=2) + "\n")
        md = REPORTS / "ingest.md"
        if md.exists():
            lines = [line for line in md.read_text().splitlines() if "redaction_ms_per_doc" not in line]
            lines.append(
                f"- `redaction_ms_per_doc` = {ms:.3f} ms CPU on this benchmark's e2e documents (measured by "
                f"benchmarks/privacy.py, not in the e2e run above; {share} of the workers' CPU per document)"
            )
            md.write_text("\n".join(lines) + "\n")
    return {"ingest_doc_redaction_ms": round(ms, 3), "ingest_doc_redaction_share_of_worker_cpu": share}


def erasure() -> tuple[dict, str]:
    """A user scope and a whole tenant erased on a real database and moto, then scanned for residue."""
    from benchmarks.privacy_erasure import measure

    return (
        measure(),
        "benchmarks.privacy_erasure.measure(): a user scope and a tenant erased, every table and bucket scanned",
    )


def main() -> None:
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="contextos-privacy-") as tmp:
        run = planted_run(Path(tmp))
    benign = benign_run()
    cost = ingest_docs_cost()
    erased, erasure_note = erasure()
    figures = {
        "planted_values": run["planted_values"],
        "planted_values_leaked": run["planted_values_leaked"],
        "benign_documents": benign["benign_documents"],
        "false_redaction_rate": benign["false_redaction_rate"],
        "facts_kept_rate": run["facts_kept_rate"],
        "erasure_residue": erased["erasure_residue"],
        "erasure": erased,
        "redaction_ms_per_doc": benign["redaction_ms_per_doc"],
        **{k: v for k, v in run.items() if k not in ("planted_values", "planted_values_leaked", "facts_kept_rate")},
        **{
            k: v
            for k, v in benign.items()
            if k not in ("benign_documents", "false_redaction_rate", "redaction_ms_per_doc")
        },
        **cost,
        "load_before": [round(x, 2) for x in load_before],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    notes = [
        "Targets: planted_values_leaked = 0, false_redaction_rate <= 0.01, facts_kept_rate >= 0.95.",
        f"Planted: {run['planted_values']} values of {run['planted_kinds']} kinds,"
        f" by way in {run['planted_by_way_in']}.",
        "Scanned verbatim, case-folded: every text/json/tsvector/bytea column of every table (audit log included), "
        "every object of the upload, cold and raw buckets, a workspace export folder and archive, the run's logs.",
        "The cold bucket is scanned but the run does not decay memories into it (cold objects are written from the "
        "already-redacted rows).",
        "false positives: a benign document counts when anything but an email was redacted; emails in Debian "
        "documents are real people's addresses (authors, maintainers) and count as found.",
        f"erasure_residue: {erasure_note}.",
        "presidio-analyzer is not used: detect-secrets, python-stdnum, phonenumbers and email-validator cover every "
        "kind, and presidio's offline setup needs a spaCy model and tldextract workarounds (FIELD-NOTES).",
    ]
    write_report("privacy", figures, title="Privacy: the write firewall", notes=notes)
    print(json.dumps({k: figures[k] for k in list(figures)[:7]}, indent=2))


if __name__ == "__main__":
    main()
