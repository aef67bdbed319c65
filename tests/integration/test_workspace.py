"""The markdown workspace (S10) on the real store: export → import → export byte-identical, edits
by sync (history and audit kept, one file changed), the upload bucket, and hostile files."""

from __future__ import annotations

import io
import json
import tarfile
import time
import uuid
from pathlib import Path

import pytest
from contextos import container
from contextos.models import Concept, MemoryType, Provenance
from contextos.sources import DocumentSource

from tests.helpers import call_api, run_queue

AWKWARD = {
    MemoryType.problem: (
        "Checkout 502s under load",
        "Checkout returns HTTP 502 when the cart service pool is exhausted.",
    ),
    MemoryType.decision: ("Use PostgreSQL for queues", "We keep job queues in PostgreSQL with SKIP LOCKED, not Redis."),
    MemoryType.fact: (
        "Ünïcode café — 東京 ☕",
        "The Tokyo office café serves matcha; naïve façades, emoji 🍵 and CJK 東京.",
    ),
    MemoryType.entity: ("../../etc/passwd", "A label that looks like a path traversal must stay a plain file name."),
    MemoryType.event: (
        "Launch: v2.0 (beta)",
        "Version 2.0 beta launched on a Tuesday with a quiet rollout.\nSecond line.",
    ),
    MemoryType.preference: ("Tabs vs. spaces?", "The team prefers four spaces, never tabs, in Python files."),
    MemoryType.code: (
        "retry_with_backoff()",
        "Use retry_with_backoff() for flaky HTTP calls:\n<!-- L2 -->\n  it sleeps.",
    ),
    MemoryType.rule: ("Never log secrets", "Credentials and document text never appear in logs or metrics."),
    MemoryType.skill: ("CON", "Windows reserved device names are fine here because every file carries its id."),
    MemoryType.task: ("Rotate the TLS certs", "The wildcard certificate expires in March; rotate it before then."),
    MemoryType.context: ("Project Nimbus", "Nimbus is the internal name of the billing rewrite."),
    MemoryType.scratch: ("Scratch: lunch order", "Two vegetarian lunches for Thursday's workshop."),
}


def remember(tenant: str, label: str, definition: str, type_: str = "fact") -> str:
    status, body = call_api("POST", "/v1/memories", tenant, {"label": label, "definition": definition, "type": type_})
    assert status == 201, body
    return body["memory_id"]


def build_rich_store(tenant: str) -> dict[str, str]:
    """Every type, L1-only and L2 (sourced) memories, scopes, tags, metadata, pins, protection,
    related edges, a three-step supersession chain, unicode and awkward labels."""
    ids = {t.value: remember(tenant, label, definition, t.value) for t, (label, definition) in AWKWARD.items()}
    chain = [
        remember(tenant, "Deploy timeout", f"The deploy timeout is {s} seconds for every service.")
        for s in (30, 90, 120)
    ]
    ids["chain"] = chain[-1]
    store = container.stores()
    record, _ = store.documents.create_document(
        tenant,
        content_hash=uuid.uuid4().hex,
        filename="kafka notes.md",
        content_type="text/markdown",
        provenance="user_upload",
        size_bytes=10,
    )
    concepts = [
        Concept(
            label="Kafka consumer lag",
            definition="Consumer lag grows when partitions rebalance during deploys of the payments service.",
            type="problem",
            importance=8,
            related=["Partition rebalancing"],
        ),
        Concept(
            label="Partition rebalancing",
            definition="Rebalancing moves partitions between consumers and pauses consumption for seconds.",
            type="fact",
            importance=6,
        ),
    ]
    container.admission().admit(
        tenant, concepts, DocumentSource(document_id=record.id, provenance=Provenance.user_upload)
    )
    with container.database().tenant_tx(tenant) as conn:
        # Scopes, tags, metadata, pins and protection as the scoped write path would set them.
        conn.execute(
            """UPDATE memories SET user_id = 'u-1', agent_id = 'agent: «x»', run_id = 'run-7',
                      tags = ARRAY['ops', 'y: no', '#hash'], metadata = '{"b": [1, 2.5, null], "a": {"z": "ü"}}'
               WHERE label = 'Kafka consumer lag'"""
        )
        conn.execute("UPDATE memories SET always_load = true WHERE type = 'rule'")
        conn.execute("UPDATE memories SET protected = true WHERE type = 'decision'")
        conn.execute("UPDATE memories SET tags = ARRAY['yes', 'null', '123'] WHERE type = 'task'")
        states = dict(conn.execute("SELECT state, count(*) FROM memories GROUP BY state").fetchall() and [])
    del states
    return ids


def files_of(tenant: str) -> dict[str, bytes]:
    return dict(container.workspace().files(tenant))


def import_files(tenant: str, files: dict[str, bytes], **kwargs):
    return container.workspace().import_files(
        tenant, sorted(files.items()), actor="tests-user", ceiling=Provenance.user_turn, **kwargs
    )


def test_export_import_export_is_byte_identical(configured, tenant):
    build_rich_store(tenant)
    first = files_of(tenant)
    text = b"".join(first.values()).decode()
    assert "state: superseded" in text and "superseded_by: " in text  # the chain is in the files
    assert "<!-- L2 -->" in text and "filename: kafka notes.md" in text  # sourced memories carry L2
    assert "agent_id: 'agent: «x»'" in text and "always_load: true" in text and "protected: true" in text
    assert {p.split("/")[0] for p in first} >= {
        "01-context", "02-daily", "03-projects", "04-skills", "05-resources", "06-decisions", "07-tasks",
        "08-rules", "09-scratch", "history",
    }  # fmt: skip
    assert sum(1 for p in first if p.startswith("history/")) == 2
    assert all(".." not in p and "//" not in p for p in first)

    empty = f"t-{uuid.uuid4().hex[:12]}"
    report = import_files(empty, first, restore=True)
    assert report.counts == {"created": len(first)}, [r for r in report.files if r.status != "created"]
    assert files_of(empty) == first

    # Importing the same files again changes nothing.
    again = import_files(empty, first, restore=True)
    assert again.counts == {"unchanged": len(first)}
    assert files_of(empty) == first


def test_an_edited_file_syncs_into_exactly_that_memory_with_history_and_audit(configured, tenant, tmp_path: Path):
    ids = build_rich_store(tenant)
    service = container.workspace()
    before = files_of(tenant)
    target = next(p for p in before if ids["context"][:8] in p)
    edited = before[target].replace(b"internal name of the billing rewrite", b"code name of the billing rewrite (2027)")
    assert edited != before[target]
    files = dict(before) | {target: edited}

    report = service.sync(tenant, sorted(files.items()), actor="tests-user", ceiling=Provenance.user_turn)
    assert report.counts == {"updated": 1, "unchanged": len(before) - 1}, report.counts
    assert [w.path for w in report.write] == [target] and report.remove == []

    after = files_of(tenant)
    assert set(after) == set(before)
    assert [p for p in after if after[p] != before[p]] == [target]
    assert b"code name of the billing rewrite (2027)" in after[target] and b"version: 2" in after[target]
    assert after[target] == report.write[0].content.encode()
    with container.database().tenant_tx(tenant) as conn:
        revisions = conn.execute("SELECT version, definition, actor FROM memory_revisions").fetchall()
        audit = conn.execute(
            "SELECT action, actor, details FROM audit_log WHERE memory_id = %s ORDER BY chain_seq", [ids["context"]]
        ).fetchall()
    assert revisions == [
        {"version": 1, "definition": "Nimbus is the internal name of the billing rewrite.", "actor": "tests-user"}
    ]
    assert audit[-1]["action"] == "edited" and audit[-1]["details"]["fields"] == ["definition"]

    # An edit made on version 1 after the store moved to version 2 is a conflict, not an overwrite.
    stale = before[target].replace(b"internal name", b"old name")
    conflict = service.sync(tenant, [(target, stale)], actor="tests-user", ceiling=Provenance.user_turn)
    assert conflict.files[0].status == "conflict" and conflict.files[0].code == "version_conflict"
    assert target not in {w.path for w in conflict.write}  # the engineer's edit is left alone
    assert files_of(tenant)[target] == after[target]


def test_a_protected_memory_refuses_edits_until_unlocked(configured, tenant):
    ids = build_rich_store(tenant)
    service = container.workspace()
    files = files_of(tenant)
    path = next(p for p in files if ids["decision"][:8] in p)
    edited = files[path].replace(b"not Redis", b"and Redis")
    refused = service.import_files(tenant, [(path, edited)], actor="tests-user", ceiling=Provenance.user_turn)
    assert refused.files[0].status == "refused" and refused.files[0].code == "protected"
    assert files_of(tenant)[path] == files[path]
    unlocked = service.import_files(
        tenant, [(path, edited)], actor="tests-user", ceiling=Provenance.user_turn, unlock=[uuid.UUID(ids["decision"])]
    )
    assert unlocked.files[0].status == "updated"
    assert b"and Redis" in files_of(tenant)[path]


def test_sync_writes_new_memories_as_files_and_renames_hand_written_ones(configured, tenant):
    build_rich_store(tenant)
    service = container.workspace()
    files = files_of(tenant)
    hand = (
        b"---\nl0: Staging database host\nimportance: 7\ntags: [infra]\n---\nStaging runs on db-staging-2 since May.\n"
    )
    missing = next(iter(files))
    given = {p: d for p, d in files.items() if p != missing} | {"05-resources/staging.md": hand}
    report = service.sync(tenant, sorted(given.items()), actor="tests-user", ceiling=Provenance.user_turn)
    created = next(r for r in report.files if r.path == "05-resources/staging.md")
    assert created.status == "created" and created.memory_id is not None
    written = {w.path for w in report.write}
    assert missing in written  # a memory without a file appears as one
    new_path = next(p for p in written if created.memory_id.hex[:8] in p)
    assert new_path.startswith("05-resources/staging-database-host-") and report.remove == ["05-resources/staging.md"]


def test_hostile_files_each_fail_alone_with_a_reason(configured, tenant):
    other = f"t-{uuid.uuid4().hex[:12]}"
    foreign_id = remember(other, "Other tenant secret", "Belongs to another tenant entirely.")
    bomb = "---\nl0: bomb\ntype: fact\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
    bomb += "c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n---\nboom\n"
    files = {
        "05-resources/good.md": b"---\nl0: Good memory\ntype: fact\n---\nThis one is fine and must be created.\n",
        "05-resources/broken.md": b"---\nl0: [unclosed\ntype: fact\n---\nbody\n",
        "05-resources/bomb.md": bomb.encode(),
        "05-resources/deep.md": b"---\nl0: deep\ntype: fact\nmetadata: " + b"[" * 200 + b"]" * 200 + b"\n---\nbody\n",
        "05-resources/unknown.md": b"---\nl0: Unknown type\ntype: gossip\n---\nbody text\n",
        "05-resources/foreign.md": f"---\nid: {foreign_id}\nl0: Stolen\ntype: fact\n---\nA foreign id.\n".encode(),
        "05-resources/huge.md": b"---\nl0: Huge\ntype: fact\n---\n" + b"x" * (300 * 1024),
        "05-resources/latin1.md": b"---\nl0: caf\xe9\ntype: fact\n---\nbody\n",
        "05-resources/python.md": b"---\nl0: !!python/object/apply:os.system ['true']\ntype: fact\n---\nbody\n",
        "05-resources/dupkey.md": b"---\nl0: a\nl0: b\ntype: fact\n---\nbody\n",
        "05-resources/unclosed.md": b"---\nl0: x\ntype: fact\nno end of frontmatter\n",
        "05-resources/list.md": b"---\n- l0\n- type\n---\nbody\n",
    }
    report = import_files(tenant, files)
    by_path = {r.path: r for r in report.files}
    assert by_path["05-resources/good.md"].status == "created"
    expected = {
        "broken.md": "broken_yaml",
        "bomb.md": "yaml_alias",
        "deep.md": "yaml_too_deep",
        "unknown.md": "unknown_type",
        "huge.md": "file_too_large",
        "latin1.md": "not_utf8",
        "python.md": "broken_yaml",
        "dupkey.md": "duplicate_key",
        "unclosed.md": "broken_yaml",
        "list.md": "not_a_mapping",
    }
    for name, code in expected.items():
        line = by_path[f"05-resources/{name}"]
        assert (line.status, line.code) == ("failed", code), (name, line)
        assert line.reason
    # Another tenant's id is an unknown id here (nothing confirms it exists): created in this
    # tenant like any new file, and the other tenant's memory is untouched.
    assert by_path["05-resources/foreign.md"].status == "created"
    assert sorted(p.split("/")[-1].rsplit("-", 1)[0] for p in files_of(tenant)) == ["good-memory", "stolen"]
    assert len(files_of(other)) == 1 and b"Belongs to another tenant" in next(iter(files_of(other).values()))


def test_an_import_answers_the_same_for_another_tenants_id_and_an_id_nobody_holds(configured, tenant):
    other = f"t-{uuid.uuid4().hex[:12]}"
    foreign_id = remember(other, "Other tenant runbook", "Belongs to another tenant entirely.")
    nobody_id = uuid.uuid4()

    def line(memory_id: object, label: str):
        text = f"---\nid: {memory_id}\nl0: {label}\ntype: fact\n---\nSome fact about {label}.\n"
        return import_files(tenant, {f"05-resources/{label}.md": text.encode()}).files[0]

    theirs, nobodys = line(foreign_id, "Probe one"), line(nobody_id, "Probe two")
    assert (theirs.status, theirs.code) == (nobodys.status, nobodys.code) == ("created", None)
    assert "another tenant" not in (theirs.reason or "") and theirs.reason == nobodys.reason
    assert len(files_of(other)) == 1 and b"Belongs to another tenant" in next(iter(files_of(other).values()))


def test_a_markdown_file_without_workspace_frontmatter_goes_to_document_ingestion(configured, tenant):
    report = import_files(tenant, {"notes/meeting.md": b"# Meeting\n\nWe chose PostgreSQL for the job queues.\n"})
    line = report.files[0]
    assert line.status == "document" and line.reason.startswith("ingested as document ")
    document_id = line.reason.rsplit(" ", 1)[-1]
    status, body = call_api("GET", f"/v1/documents/{document_id}", tenant)
    assert status == 200 and body["filename"] == "meeting.md" and body["status"] == "queued"


def test_a_low_trust_file_is_held_for_review_not_admitted(configured, tenant):
    text = b"---\nl0: Web rumour\ntype: fact\nprovenance: web_content\n---\nA forum post says the API is free.\n"
    report = import_files(tenant, {"05-resources/rumour.md": text})
    assert report.files[0].status == "held" and "review item" in report.files[0].reason
    assert files_of(tenant) == {}
    status, body = call_api("GET", "/v1/review", tenant)
    assert status == 200 and [i["label"] for i in body["items"]] == ["Web rumour"]


def test_an_agent_credential_cannot_import_user_turn_provenance(configured, tenant):
    text = b"---\nl0: Claimed by an agent\ntype: fact\nprovenance: user_turn\n---\nAn agent wrote this file.\n"
    report = container.workspace().import_files(
        tenant, [("05-resources/a.md", text)], actor="agent", ceiling=Provenance.agent_turn
    )
    assert report.files[0].status == "created"
    assert b"provenance: agent_turn" in next(iter(files_of(tenant).values()))


def test_a_frontmatter_file_dropped_in_the_upload_bucket_becomes_that_memory(
    configured, tenant, s3, sqs, local_aws, drain_ingest_queue
):
    good = "---\nl0: Dropped memory\ntype: rule\nalways_load: true\nimportance: 9\n---\n"
    good += "Always pin the region to eu-west-1.\n"
    bomb = "---\nl0: x\ntype: fact\na: &a [1, 2]\nb: *a\n---\nboom\n"
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/rules/region.md", Body=good.encode())
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/bomb.md", Body=bomb.encode())
    s3.put_object(
        Bucket=local_aws.upload_bucket, Key=f"uploads/{tenant}/typo.md", Body=b"---\ntype: gossip\nl0: y\n---\nz"
    )
    run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn)
    files = files_of(tenant)
    assert len(files) == 1
    ((path, data),) = files.items()
    assert path.startswith("08-rules/dropped-memory-") and b"always_load: true" in data
    assert b"filename: region.md" in data  # the dropped file is the memory's source
    with container.database().tenant_tx(tenant) as conn:
        docs = {r["filename"]: r for r in conn.execute("SELECT filename, status, error FROM documents").fetchall()}
    assert docs["region.md"]["status"] == "done"
    assert docs["bomb.md"]["status"] == "failed" and docs["bomb.md"]["error"].startswith("yaml_alias")
    assert docs["typo.md"]["status"] == "failed" and docs["typo.md"]["error"].startswith("unknown_type")


def test_the_export_route_streams_an_archive_of_the_same_files(configured, tenant):
    build_rich_store(tenant)
    import base64

    from contextos.local.events import api_proxy_event
    from contextos.local.handlers import invoke

    authorizer = {"tenant_id": tenant, "principal": "user", "key_name": "t", "provenance_ceiling": "user_turn"}
    response = invoke("api", api_proxy_event("GET", "/v1/export", {}, {"format": "tar"}, None, authorizer))
    assert response["statusCode"] == 200 and response["isBase64Encoded"]
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(response["body"])), mode="r:gz") as archive:
        members = {m.name: archive.extractfile(m).read() for m in archive.getmembers()}
    assert members == files_of(tenant)

    status, body = call_api("POST", "/v1/import", tenant, {"files": [{"path": "x.md", "content": "---\nl0: [\n---\n"}]})
    assert status == 200 and body["files"][0]["status"] == "failed" and body["files"][0]["code"] == "broken_yaml"
    status, body = call_api("POST", "/v1/import", tenant, {"files": "nope"})
    assert status == 422 and body["error"]["code"] == "validation_error"
    status, body = call_api("GET", "/v1/export", tenant, query={"format": "rar"})
    assert status == 422


def test_router_files_put_rules_first_and_an_index_last_within_the_budget(configured, tenant):
    build_rich_store(tenant)
    files = {f.path: f.content for f in container.workspace().router(tenant, "claude", token_budget=400)}
    text = files["CLAUDE.md"]
    assert text.index("## Rules") < text.index("## Key memories") < text.index("## Index") < text.index("## MCP")
    assert "Never log secrets" in text.split("## Key memories")[0]
    assert json.loads(files[".mcp.json"])["mcpServers"]["contextos"]["env"]["CONTEXTOS_API_URL"]
    from contextos.normalization import estimate_tokens

    assert estimate_tokens(text) <= 400
    agents = {f.path: f.content for f in container.workspace().router(tenant, "agents", token_budget=2000)}
    assert "AGENTS.md" in agents and "[mcp_servers.contextos]" in agents[".codex/config.toml"]


@pytest.mark.parametrize("fmt", ["zip", "tar"])
def test_archives_are_the_same_bytes_for_an_unchanged_store(configured, tenant, fmt):
    build_rich_store(tenant)
    service = container.workspace()
    first = b"".join(service.archive(tenant, fmt))
    time.sleep(1.1)  # a clock in any header (gzip's mtime, a zip entry's date) would now differ
    assert first == b"".join(service.archive(tenant, fmt))


def test_imported_files_keep_their_semantics_pinned_in_context_and_scratch_expiring(configured, tenant):
    pinned = (
        b"---\nl0: Region pin\ntype: rule\nalways_load: true\n---\nEvery deployment pins the region to eu-west-1.\n"
    )
    scratch = (
        b"---\nl0: Scratch lunch order\ntype: scratch\nstate:\n  expires_at: '2020-01-01T00:00:00Z'\n---\n"
        b"Two vegetarian lunches for the workshop.\n"
    )
    other = b"---\nl0: Kafka consumer lag\ntype: problem\n---\nLag grows when partitions rebalance.\n"
    report = import_files(
        tenant, {"08-rules/pin.md": pinned, "09-scratch/lunch.md": scratch, "03-projects/k.md": other}
    )
    assert report.counts == {"created": 3}
    status, body = call_api("POST", "/v1/context", tenant, {"query": "why does kafka lag grow", "dry_run": True})
    assert status == 200
    labels = [m["label"] for m in body["memories"]]
    assert labels[0] == "Region pin"  # always in context, and rules come first
    container.lifecycle().run()
    assert not any("lunch" in p for p in files_of(tenant))  # the scratch memory expired
