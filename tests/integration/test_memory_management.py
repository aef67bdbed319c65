"""Managing memories through the API (S11) on the real database and moto: list with filters and
cursors, protected edits that re-embed and keep history, forgetting and restoring, forgetting a
document (shared memories keep their other sources, sole-source ones leave every read and cold
storage, the audit chain still verifies), scopes, the graph and presigned uploads."""

import gzip
import json
import urllib.request

import pytest
from contextos import container
from contextos.models import LifecycleReport

from tests.helpers import call_api
from tests.integration.test_cold_storage import forget as decay_to_forgotten
from tests.integration.test_merging import candidates
from tests.memory_writer import add_memories, new_document


def remember(tenant: str, label: str, definition: str, **extra) -> str:
    status, body = call_api("POST", "/v1/memories", tenant, {"label": label, "definition": definition, **extra})
    assert (status, body["status"]) in ((201, "admitted"), (200, "merged")), body  # merged: the memory it joined
    return body["memory_id"]


def context_ids(tenant: str, query: str, **extra) -> set[str]:
    status, body = call_api("POST", "/v1/context", tenant, {"query": query, "dry_run": True, **extra})
    assert status == 200, body
    return {m["id"] for m in body["memories"]}


def search_ids(tenant: str, query: str, **extra) -> set[str]:
    status, body = call_api("POST", "/v1/search", tenant, {"query": query, **extra})
    assert status == 200, body
    return {m["id"] for m in body["memories"]}


def listed(tenant: str, **query) -> list[dict]:
    status, body = call_api("GET", "/v1/memories", tenant, query={k: str(v) for k, v in query.items()})
    assert status == 200, body
    return body["memories"]


def test_the_list_filters_by_type_prefix_and_band_and_pages_with_a_cursor(configured, tenant):
    for n in range(5):
        remember(tenant, f"Service {n} owner", f"Team {n} owns service number {n} in production.")
    remember(tenant, "Coffee preference", "Ana drinks her coffee black.", type="preference")
    assert {m["label"] for m in listed(tenant, type="preference")} == {"Coffee preference"}
    assert len(listed(tenant, prefix="service ")) == 5
    assert listed(tenant, prefix="serv%") == []  # LIKE wildcards are literal
    assert len(listed(tenant, band="strong")) == 6 and listed(tenant, band="critical") == []
    seen, cursor = [], None
    while True:
        query = {"limit": "2"} | ({"cursor": cursor} if cursor else {})
        status, page = call_api("GET", "/v1/memories", tenant, query=query)
        assert status == 200
        seen += [m["id"] for m in page["memories"]]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 6
    status, body = call_api("GET", "/v1/memories", tenant, query={"cursor": "not-a-cursor"})
    assert status == 422 and body["error"]["code"] == "validation_error"  # not the cursor's declared form
    status, body = call_api("GET", "/v1/memories", tenant, query={"metadata": "no-equals-sign"})
    assert status == 422 and body["error"]["code"] == "validation_error"  # not key=value, as the document says


def test_an_edit_re_embeds_keeps_the_replaced_version_and_is_audited(configured, tenant):
    memory_id = remember(tenant, "Deploy window", "Deploys happen on Tuesday mornings.")
    status, edited = call_api(
        "PATCH",
        f"/v1/memories/{memory_id}",
        tenant,
        {"definition": "Deploys happen on Thursday afternoons after the review.", "importance": 8, "tags": ["ops"]},
    )
    assert status == 200, edited
    assert edited["reembedded"] is True and edited["version"] == 2
    assert set(edited["changed"]) == {"definition", "importance", "tags"}
    status, detail = call_api("GET", f"/v1/memories/{memory_id}", tenant)
    assert detail["definition"].startswith("Deploys happen on Thursday") and detail["importance"] == 8
    assert detail["tags"] == ["ops"] and detail["version"] == 2 and detail["protected"] is False
    with container.database().tenant_tx(tenant) as conn:
        revision = conn.execute("SELECT version, definition FROM memory_revisions WHERE memory_id = %s", [memory_id])
        revision = revision.fetchall()
        similarity = conn.execute(
            "SELECT 1 - (embedding <=> %s::vector) AS s FROM memory_vectors WHERE memory_id = %s",
            [str(container.embedder().embed(["Deploy window: " + detail["definition"]])[0]), memory_id],
        ).fetchone()["s"]
        actions = [r["action"] for r in conn.execute("SELECT action FROM audit_log ORDER BY chain_seq")]
    assert revision == [{"version": 1, "definition": "Deploys happen on Tuesday mornings."}]
    assert similarity > 0.999  # the vector is the new text's
    assert actions[-1] == "edited"
    # The new text is what a search finds.
    assert memory_id in search_ids(tenant, "Thursday afternoon deploys")
    status, _body = call_api("PATCH", f"/v1/memories/{memory_id}", tenant, {})
    assert status == 400


@pytest.mark.parametrize("field", ["label", "definition", "importance", "type", "always_load", "protected"])
def test_an_explicit_null_for_a_field_every_memory_has_is_a_422_and_changes_nothing(configured, tenant, field):
    memory_id = remember(tenant, "Release train", "The release train leaves every second Friday.")
    status, body = call_api("PATCH", f"/v1/memories/{memory_id}", tenant, {field: None})
    assert status == 422, body
    assert body["error"]["code"] == "validation_error" and field in json.dumps(body["error"]["details"])
    status, detail = call_api("GET", f"/v1/memories/{memory_id}", tenant)
    assert detail["label"] == "Release train" and detail["version"] == 1


def test_an_explicit_null_clears_tags_metadata_and_owner_scopes(configured, tenant):
    memory_id = remember(
        tenant,
        "Pager rota",
        "The pager rota changes on Mondays.",
        tags=["ops"],
        metadata={"team": "sre"},
        user_id="ana",
    )
    status, body = call_api(
        "PATCH", f"/v1/memories/{memory_id}", tenant, {"tags": None, "metadata": None, "user_id": None}
    )
    assert status == 200, body
    status, detail = call_api("GET", f"/v1/memories/{memory_id}", tenant)
    assert detail["tags"] == [] and detail["metadata"] == {} and detail["user_id"] is None


def test_labels_that_differ_only_by_unicode_form_are_one_memory(configured, tenant):
    first = remember(tenant, "Café rollout plan", "The café rollout starts in the Lisbon office.")
    # definitions far apart, so only the key can join them (not the near-duplicate merge)
    variants = {
        "Cafe\u0301 rollout plan": "Its budget is owned by the finance team until March.",
        "Ｃａｆé rollout plan": "Ana signs off every step of it with the landlord.",
        "Café roll\u200bout plan": "Two baristas are hired for each new site.",
    }
    for variant, definition in variants.items():
        status, body = call_api("POST", "/v1/memories", tenant, {"label": variant, "definition": definition})
        assert status == 200 and body["status"] == "merged", body
        assert body["memory_id"] == first, (variant, body)


def test_a_protected_memory_refuses_edits_and_forgetting_without_unlock(configured, tenant):
    memory_id = remember(tenant, "Incident contact", "Call the on-call lead first during an incident.")
    assert call_api("PATCH", f"/v1/memories/{memory_id}", tenant, {"protected": True})[0] == 200
    status, body = call_api("PATCH", f"/v1/memories/{memory_id}", tenant, {"definition": "Email someone."})
    assert status == 403 and body["error"]["code"] == "memory_protected"
    status, body = call_api("DELETE", f"/v1/memories/{memory_id}", tenant)
    assert status == 403 and body["error"]["code"] == "memory_protected"
    status, detail = call_api("GET", f"/v1/memories/{memory_id}", tenant)
    assert detail["definition"] == "Call the on-call lead first during an incident."
    status, edited = call_api(
        "PATCH", f"/v1/memories/{memory_id}", tenant, {"definition": "Page the incident commander.", "unlock": True}
    )
    assert status == 200 and edited["version"] == 3


def test_forgetting_a_memory_removes_it_from_every_read_and_a_restore_brings_it_back(configured, tenant):
    memory_id = remember(tenant, "Billing cutoff", "Invoices close on the 25th of each month.")
    assert memory_id in context_ids(tenant, "when do invoices close")
    status, body = call_api("DELETE", f"/v1/memories/{memory_id}", tenant, query={"reason": "asked to forget"})
    assert status == 200 and body == {"id": memory_id, "forgotten": True, "cold_copy_removed": False}
    assert memory_id not in context_ids(tenant, "when do invoices close")
    assert memory_id not in search_ids(tenant, "invoices close 25th")
    assert memory_id not in {m["id"] for m in listed(tenant)}
    assert call_api("GET", f"/v1/memories/{memory_id}", tenant)[0] == 404
    assert call_api("DELETE", f"/v1/memories/{memory_id}", tenant)[0] == 404
    status, restored = call_api("POST", f"/v1/memories/{memory_id}/restore", tenant)
    assert status == 200 and restored == {
        "id": memory_id,
        "restored": "forget",
        "state": "active",
        "mode": None,  # only a supersession is undone one way or the other
        "superseded": [],
        "conflicts_with": None,
    }
    assert memory_id in context_ids(tenant, "when do invoices close")
    with container.database().tenant_tx(tenant) as conn:
        actions = [r["action"] for r in conn.execute("SELECT action FROM audit_log WHERE memory_id = %s", [memory_id])]
    assert actions[-2:] == ["deleted", "restored"]
    assert container.governance().verify(tenant).ok


def _supersede_deploy_window(tenant: str) -> tuple[str, str]:
    old = remember(tenant, "Deploy window", "The deploy window is Tuesday afternoon.")
    _status, new = call_api(
        "POST",
        "/v1/memories",
        tenant,
        {"label": "Deploy window", "definition": "The deploy window is Thursday afternoon."},
    )
    assert new["superseded"] == [old]
    return old, new["memory_id"]


def _states(tenant: str) -> tuple[dict[str, tuple[str, str | None]], set[tuple[str, str, str]]]:
    with container.database().tenant_tx(tenant) as conn:
        states = {
            str(r["id"]): (r["state"], str(r["superseded_by"]) if r["superseded_by"] else None)
            for r in conn.execute("SELECT id, state, superseded_by FROM memories")
        }
        edges = {
            (str(r["src_id"]), str(r["dst_id"]), r["type"])
            for r in conn.execute("SELECT src_id, dst_id, type FROM relationships WHERE type <> 'related'")
        }
    return states, edges


def test_restoring_a_superseded_memory_makes_it_current_and_supersedes_its_successor(configured, tenant):
    old, new = _supersede_deploy_window(tenant)
    status, restored = call_api("POST", f"/v1/memories/{old}/restore", tenant)
    assert status == 200, restored
    assert restored == {
        "id": old,
        "restored": "supersession",
        "state": "active",
        "mode": "current",
        "superseded": [new],
        "conflicts_with": None,
    }
    states, edges = _states(tenant)
    assert states[old] == ("active", None) and states[new] == ("superseded", old)  # one current version
    assert edges == {(old, new, "supersedes")}
    found = search_ids(tenant, "when is the deploy window")
    assert old in found and new not in found
    status, history = call_api("GET", f"/v1/memories/{old}/history", tenant)
    assert status == 200
    closed = {v["id"]: v["valid_to"] for v in history["versions"]}
    assert set(closed) == {old, new} and closed[old] is None and closed[new] is not None  # the chain, both ends
    # reversible the same way: restoring the newer one makes it current again
    status, back = call_api("POST", f"/v1/memories/{new}/restore", tenant)
    assert status == 200 and back["superseded"] == [old]
    states, edges = _states(tenant)
    assert states[new] == ("active", None) and states[old] == ("superseded", new)
    assert edges == {(new, old, "supersedes")}
    status, body = call_api("POST", f"/v1/memories/{new}/restore", tenant)
    assert status == 409 and body["error"]["code"] == "not_restorable"
    assert container.governance().verify(tenant).ok


def test_restoring_both_versions_records_a_conflict_that_governance_lists_and_reads_show_newer_first(
    configured, tenant
):
    old, new = _supersede_deploy_window(tenant)
    status, restored = call_api("POST", f"/v1/memories/{old}/restore", tenant, query={"mode": "both"})
    assert status == 200 and restored["mode"] == "both" and restored["conflicts_with"] == new
    assert restored["superseded"] == []
    states, edges = _states(tenant)
    assert states[old] == ("active", None) and states[new] == ("active", None)
    assert edges == {(new, old, "contradicts")}
    report = container.reports().run(tenant)
    listed = [{str(c.a.id), str(c.b.id)} for c in report.conflict_candidates.items]
    assert {old, new} in listed
    status, block = call_api("POST", "/v1/context", tenant, {"query": "when is the deploy window?"})
    assert status == 200, block
    text = block["context"]
    assert text.index("Thursday") < text.index("Tuesday")  # the current one first, the older one still there
    status, _body = call_api("POST", f"/v1/memories/{old}/restore", tenant, query={"mode": "sometimes"})
    assert status == 422


DOC_A = [
    ("Canary release", "A canary release sends a small share of traffic to the new version first.", "decision"),
    ("Feature flags", "Feature flags let the team disable a risky change without a deploy.", "decision"),
]
DOC_B = [("Canary release", "Canary releases catch regressions before every user sees them.", "decision")]


def test_forgetting_a_document_keeps_shared_memories_with_one_source_fewer(configured, tenant, local_embedder, s3):
    store = container.stores()
    doc_a, doc_b = new_document(store, tenant), new_document(store, tenant)
    kw = {"embedder_id": "local", "source_type": "text", "domain": "general", "counts": {}}
    store.admission.store_document_concepts(tenant, doc_a, candidates(local_embedder, DOC_A), **kw)
    store.admission.store_document_concepts(tenant, doc_b, candidates(local_embedder, DOC_B), **kw)
    with container.database().tenant_tx(tenant) as conn:
        ids = {r["label"]: str(r["id"]) for r in conn.execute("SELECT id, label FROM memories")}
    canary, flags = ids["Canary release"], ids["Feature flags"]
    assert flags in context_ids(tenant, "feature flags risky change")

    status, body = call_api("DELETE", f"/v1/documents/{doc_a}", tenant)
    assert status == 200, body
    assert body["memories_forgotten"] == 1 and body["memories_kept"] == 1 and body["items_removed"] == 2

    status, detail = call_api("GET", f"/v1/memories/{canary}", tenant)
    assert status == 200 and [s["document_id"] for s in detail["sources"]] == [str(doc_b)]
    assert detail["definition"] == DOC_B[0][1]  # the forgotten document's wording went with it
    assert flags not in context_ids(tenant, "feature flags risky change")
    assert flags not in search_ids(tenant, "feature flags risky change")
    assert flags not in {m["id"] for m in listed(tenant)}
    assert call_api("GET", f"/v1/memories/{flags}", tenant)[0] == 404
    status, graph = call_api("GET", "/v1/graph", tenant)
    assert flags not in {n["id"] for n in graph["nodes"]}
    assert call_api("GET", f"/v1/documents/{doc_a}", tenant)[0] == 404
    assert call_api("DELETE", f"/v1/documents/{doc_a}", tenant)[0] == 404
    assert container.governance().verify(tenant).ok


def test_forgetting_a_document_removes_its_memories_from_cold_storage(configured, tenant, local_embedder, s3):
    store = container.stores()
    doc_a, doc_b = new_document(store, tenant), new_document(store, tenant)
    kw = {"embedder_id": "local", "source_type": "text", "domain": "general", "counts": {}}
    store.admission.store_document_concepts(tenant, doc_a, candidates(local_embedder, DOC_A), **kw)
    store.admission.store_document_concepts(tenant, doc_b, candidates(local_embedder, DOC_B), **kw)
    decay_to_forgotten(tenant, ["Canary release", "Feature flags"])
    scanned = LifecycleReport()  # this tenant alone: other tests' forgotten memories are theirs
    container.lifecycle().scan_tenant(tenant, scanned)
    assert scanned.archived == 2
    with container.database().tenant_tx(tenant) as conn:
        ids = {r["label"]: str(r["id"]) for r in conn.execute("SELECT id, label FROM memories")}

    status, body = call_api("DELETE", f"/v1/documents/{doc_a}", tenant)
    assert status == 200, body
    assert body["cold_copies_removed"] == 1 and body["memories_forgotten"] == 1

    bucket = container.cold_storage().bucket
    objects = s3.list_objects_v2(Bucket=bucket, Prefix=f"cold/{tenant}/").get("Contents", [])
    texts = [gzip.decompress(s3.get_object(Bucket=bucket, Key=o["Key"])["Body"].read()) for o in objects]
    everything = b"".join(texts).decode()
    assert "Feature flags" not in everything and DOC_A[0][1] not in everything
    assert DOC_B[0][1] in everything  # the shared memory stays cold, with doc B's occurrence only
    with container.database().tenant_tx(tenant) as conn:
        rows = {r["label"]: r for r in conn.execute("SELECT id, label, cold_object_key FROM memories")}
    assert set(rows) == {"Canary release"}
    key = rows["Canary release"]["cold_object_key"]
    assert key in {o["Key"] for o in objects} and len(objects) == 1
    member = json.loads(gzip.decompress(s3.get_object(Bucket=bucket, Key=key)["Body"].read()))
    assert [str(i["document_id"]) for i in member["items"]] == [str(doc_b)]
    assert ids["Feature flags"] not in {m["id"] for m in listed(tenant)}
    assert container.governance().verify(tenant).ok


def test_scope_filters_keep_one_users_memories_out_of_anothers_context(configured, tenant):
    ana = remember(tenant, "Favourite editor", "Ana writes code in Emacs every day.", user_id="ana", tags=["tools"])
    bo = remember(tenant, "Preferred editor", "Bo writes code in Vim every day.", user_id="bo", metadata={"team": "x"})
    shared = remember(tenant, "Code review rule", "Every change needs one code review before merge.")
    query = "which editor writes code every day"
    assert {ana, bo} <= context_ids(tenant, query)
    assert context_ids(tenant, query, scope={"user_id": "bo"}) == {bo}
    assert ana not in search_ids(tenant, query, scope={"user_id": "bo"})
    assert search_ids(tenant, query, scope={"tags": ["tools"]}) == {ana}
    assert search_ids(tenant, query, scope={"metadata": {"team": "x"}}) == {bo}
    assert shared not in context_ids(tenant, "code review before merge", scope={"user_id": "ana"})
    assert [m["id"] for m in listed(tenant, user_id="ana")] == [ana]
    status, body = call_api("GET", "/v1/memories", tenant, query={"metadata": "team=x"})
    assert [m["id"] for m in body["memories"]] == [bo]
    status, body = call_api("POST", "/v1/context", tenant, {"query": query, "scope": {"user_id": "ana", "bogus": 1}})
    assert status == 422


def test_a_small_scope_beside_a_large_one_gets_its_k_nearest(configured, tenant, local_embedder):
    """pgvector post-filters ANN rows: the scoped search must still return a small scope's memories."""
    store = container.stores()
    many = [(f"Topic {n}", f"Note {n} about deployment pipelines and release trains.", "fact") for n in range(60)]
    add_memories(store, tenant, candidates(local_embedder, many), embedder_id="local")
    mine = remember(tenant, "Release note", "Release trains leave every second Tuesday.", user_id="solo")
    assert search_ids(tenant, "deployment pipelines release trains", scope={"user_id": "solo"}) == {mine}


def test_include_history_shows_the_superseded_versions(configured, tenant):
    old = remember(tenant, "Build timeout", "The build timeout is 10 minutes for every pipeline.")
    status, new = call_api(
        "POST",
        "/v1/memories",
        tenant,
        {"label": "Build timeout", "definition": "The build timeout is 25 minutes for every pipeline."},
    )
    assert new["superseded"] == [old]
    status, body = call_api("POST", "/v1/search", tenant, {"query": "build timeout", "include_history": True})
    assert status == 200
    hit = next(m for m in body["memories"] if m["id"] == new["memory_id"])
    assert [h["id"] for h in hit["history"]] == [old] and "10 minutes" in hit["history"][0]["definition"]
    _status, body = call_api("POST", "/v1/search", tenant, {"query": "build timeout"})
    assert all(m["history"] == [] for m in body["memories"])


def test_the_graph_around_a_memory_has_typed_weighted_edges(configured, tenant, local_embedder):
    store = container.stores()
    specs = [
        ("Canary release", "A canary release sends a small share of traffic first.", "decision"),
        ("Feature flags", "Feature flags disable a risky change without a deploy.", "decision"),
        ("Rollback plan", "Rollback switches the router back quickly.", "decision"),
    ]
    # each of the first two names the other: the pair is stored both ways
    related = {"Canary release": ["Feature flags"], "Feature flags": ["Canary release", "Rollback plan"]}
    kw = {"embedder_id": "local", "source_type": "text", "domain": "general", "counts": {}}
    store.admission.store_document_concepts(
        tenant, new_document(store, tenant), candidates(local_embedder, specs, related), **kw
    )
    with container.database().tenant_tx(tenant) as conn:
        ids = {r["label"]: str(r["id"]) for r in conn.execute("SELECT id, label FROM memories")}
    status, graph = call_api("GET", f"/v1/memories/{ids['Canary release']}/graph", tenant, query={"hops": "1"})
    assert status == 200
    assert {n["label"] for n in graph["nodes"]} == {"Canary release", "Feature flags"}
    assert all(e["type"] == "related" and e["weight"] > 0 for e in graph["edges"]) and graph["edges"]
    assert len(graph["edges"]) == 1  # a related pair is one edge, however it is stored (#41)
    status, whole = call_api("GET", "/v1/graph", tenant)
    assert status == 200
    assert (
        sorted((frozenset((e["src"], e["dst"])) for e in whole["edges"]), key=sorted)
        == sorted(
            {
                frozenset((ids["Canary release"], ids["Feature flags"])),
                frozenset((ids["Feature flags"], ids["Rollback plan"])),
            },
            key=sorted,
        )
        and len(whole["edges"]) == 2
    )
    status, graph = call_api("GET", f"/v1/memories/{ids['Canary release']}/graph", tenant, query={"hops": "2"})
    assert {n["label"]: n["hops"] for n in graph["nodes"]}["Rollback plan"] == 2
    assert {"band", "type", "importance", "community"} <= set(graph["nodes"][0])
    assert call_api("GET", f"/v1/memories/{ids['Canary release']}/graph", tenant, query={"hops": "9"})[0] == 422


def test_an_upload_url_accepts_a_put_into_the_tenants_prefix(configured, tenant, s3, local_aws):
    status, ticket = call_api(
        "POST", "/v1/uploads", tenant, {"filename": "../notes.md", "content_type": "text/markdown"}
    )
    assert status == 201, ticket
    assert ticket["key"].startswith(f"uploads/{tenant}/") and ticket["key"].endswith("/notes.md")
    request = urllib.request.Request(ticket["url"], data=b"# Notes\n\nHello.", method="PUT", headers=ticket["headers"])
    with urllib.request.urlopen(request) as response:
        assert response.status == 200
    body = s3.get_object(Bucket=local_aws.upload_bucket, Key=ticket["key"])["Body"].read()
    assert body == b"# Notes\n\nHello."


def test_documents_are_listed_by_status_with_a_cursor(configured, tenant):
    store = container.stores()
    made = {str(new_document(store, tenant)) for _ in range(3)}
    status, page = call_api("GET", "/v1/documents", tenant, query={"limit": "2", "status": "queued"})
    assert status == 200 and len(page["documents"]) == 2 and page["next_cursor"]
    status, rest = call_api("GET", "/v1/documents", tenant, query={"cursor": page["next_cursor"]})
    assert {d["id"] for d in page["documents"] + rest["documents"]} == made
    assert call_api("GET", "/v1/documents", tenant, query={"status": "done"})[1]["documents"] == []


@pytest.mark.parametrize("path", ["/v1/memories/not-a-uuid", "/v1/documents/not-a-uuid"])
def test_bad_ids_are_a_4xx(configured, tenant, path):
    assert call_api("DELETE", path, tenant)[0] == 422


def test_a_scoped_documents_memories_carry_its_user(configured, tenant, sqs, local_aws, drain_ingest_queue):
    from tests.helpers import run_queue
    from tests.integration.test_ingest_pipeline import RUNBOOK

    status, accepted = call_api(
        "POST", "/v1/documents", tenant, {"text": RUNBOOK, "filename": "runbook.md", "user_id": "ana", "tags": ["ops"]}
    )
    assert status == 202, accepted
    assert run_queue(sqs, local_aws.ingest_queue_url, local_aws.ingest_queue_arn) == 1
    mine = listed(tenant, user_id="ana")
    assert mine and all(m["user_id"] == "ana" and "ops" in m["tags"] for m in mine)
    assert context_ids(tenant, "how do we roll back a deployment?", scope={"user_id": "bo"}) == set()
    assert context_ids(tenant, "how do we roll back a deployment?", scope={"user_id": "ana"})
    status, page = call_api("GET", "/v1/documents", tenant, query={"user_id": "ana"})
    assert [d["id"] for d in page["documents"]] == [accepted["id"]] and page["documents"][0]["tags"] == ["ops"]


def test_a_scoped_sessions_memories_carry_its_user(configured, tenant, sqs, local_aws):
    from contextos.conversations import FlushJob

    from tests.integration.test_conversations import PREFERENCE_CHAT

    first, *rest = PREFERENCE_CHAT
    status, _ = call_api(
        "POST", "/v1/sessions/ana-chat/messages", tenant, {"role": first[0], "content": first[1], "user_id": "ana"}
    )
    assert status == 201
    for role, content in rest:
        assert call_api("POST", "/v1/sessions/ana-chat/messages", tenant, {"role": role, "content": content})[0] == 201
    container.conversations().end(tenant, "ana-chat")
    with container.database().tenant_tx(tenant) as conn:
        session = conn.execute("SELECT user_id FROM sessions WHERE id = 'ana-chat'").fetchone()
        flush = conn.execute("SELECT message_from, message_to FROM conversation_flushes").fetchone()
    assert session["user_id"] == "ana"
    job = FlushJob(tenant_id=tenant, session_id="ana-chat", **flush)
    container.conversations().process(job)
    memories = listed(tenant)
    assert memories and {m["user_id"] for m in memories} == {"ana"}
    assert listed(tenant, user_id="bo") == []


def test_a_scope_too_large_for_the_exact_pass_goes_through_the_widened_ann(
    configured, tenant, local_embedder, monkeypatch
):
    from contextos.store import scoped_reads

    monkeypatch.setattr(scoped_reads, "SCOPED_EXACT_MAX_ROWS", 5)
    store = container.stores()
    specs = [(f"Topic {n}", f"Note {n} about deployment pipelines and release trains.", "fact") for n in range(40)]
    ids = add_memories(store, tenant, candidates(local_embedder, specs), embedder_id="local")
    store.admission.settle_vectors(tenant, limit=20)  # half in the ANN index, half in the fresh segment
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("UPDATE memories SET user_id = 'big' WHERE id = ANY(%s)", [ids[::2]])
    for _ in range(2):  # the second query knows the scope is large and skips the exact pass
        found = search_ids(tenant, "deployment pipelines release trains", scope={"user_id": "big"}, limit=15)
        assert len(found) == 15 and found <= {str(i) for i in ids[::2]}


def test_an_edit_of_a_scoped_memorys_label_keeps_its_key_within_its_owner(configured, tenant):
    ana = remember(tenant, "Lunch order", "Ana orders the vegetarian lunch.", user_id="ana")
    bo = remember(tenant, "Lunch choice", "Bo orders the fish.", user_id="bo")
    status, body = call_api("PATCH", f"/v1/memories/{bo}", tenant, {"label": "Lunch order"})
    assert status == 200, body  # the same words as Ana's label, but Bo's own key
    with container.database().tenant_tx(tenant) as conn:
        keys = {str(r["id"]): r["norm_key"] for r in conn.execute("SELECT id, norm_key FROM memories")}
    assert keys[ana] != keys[bo] and keys[bo].endswith("@u=bo")
    assert call_api("PATCH", f"/v1/memories/{bo}", tenant, {"user_id": ""})[0] == 422
