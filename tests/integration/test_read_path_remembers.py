"""S5 and S6 on real PostgreSQL and moto S3: relevance gates the score, forgetting demotes (cold
memories come back by relevance relative to the query's own candidates, not by a 0.80 cosine), an
unrelated query brings nothing back, dry runs change nothing, and the BM25 text search matches a
case computed by hand."""

import math
from datetime import UTC, datetime, timedelta

import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.models import BASE_TRUST, ContextRequest, LifecycleReport, MemoryCandidate, Provenance
from contextos.ports.reads import BM25Params

from tests.helpers import call_api
from tests.memory_writer import add_memories

DEPLOY = ("Autoscaling", "Kubernetes autoscaling adds pods with the horizontal pod autoscaler when CPU load rises.")
OTHERS = [
    ("Cafeteria menu", "The cafeteria serves pasta on Mondays and curry on Wednesdays."),
    ("Parking", "The parking garage closes at nine in the evening."),
    ("Book club", "The book club meets on the last Friday of the month."),
]


def add(tenant: str, embedder, specs: list[tuple[str, str]], *, days_ago: float, kind: str = "event") -> list:
    store = container.stores()
    rate = decay_rate(5, kind, get_settings().decay)
    vectors = embedder.embed([f"{label}: {definition}" for label, definition in specs])
    at = datetime.now(UTC) - timedelta(days=days_ago)
    return add_memories(
        store,
        tenant,
        [
            MemoryCandidate(
                norm_key=label.lower(),
                label=label,
                definition=definition,
                type=kind,
                importance=5,
                embedding=vector,
                decay_rate=rate,
                provenance=Provenance.user_upload,
                base_trust=BASE_TRUST[Provenance.user_upload],
            )
            for (label, definition), vector in zip(specs, vectors, strict=True)
        ],
        embedder_id="test",
        at=[at] * len(specs),
    )


@pytest.fixture(autouse=True)
def scanned_after(configured, tenant):
    """Each test's forgotten memories go cold before the next test: other tests count what a
    lifecycle run over the shared database archives."""
    yield
    container.lifecycle().scan_tenant(tenant, LifecycleReport())


def scan(tenant: str) -> None:
    container.lifecycle().scan_tenant(tenant, LifecycleReport())


def tiers(tenant: str) -> dict[str, tuple[str, str]]:
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute("SELECT label, tier, definition FROM memories").fetchall()
    return {r["label"]: (r["tier"], r["definition"]) for r in rows}


def test_an_old_relevant_memory_outranks_recent_irrelevant_ones(configured, tenant, local_embedder):
    add(tenant, local_embedder, [DEPLOY], days_ago=45)  # an event unused for 45 days: forgotten, still hot
    add(tenant, local_embedder, OTHERS, days_ago=0)
    result = container.retrieval().context(
        tenant, ContextRequest(query="how does kubernetes add pods under load?", dry_run=True)
    )
    labels = [m.label for m in result.memories]
    assert labels[0] == "Autoscaling"
    top = result.memories[0]
    assert top.band == "forgotten" and top.score.strength < 0.1  # demoted, not lost
    for m in result.memories[1:]:  # fresher, stronger, and still behind it
        assert m.score.strength > top.score.strength and m.score.relevance < top.score.relevance


def test_with_the_same_subject_rule_an_update_outranks_what_it_updates(configured, tenant, local_embedder, monkeypatch):
    monkeypatch.setattr(get_settings().retrieval.recipes["relevance"], "same_subject_cosine", 0.5)  # off by default
    add(tenant, local_embedder, [("Standup time", "The daily standup is at 10 am in the small room.")], days_ago=60)
    add(
        tenant, local_embedder, [("Standup moved", "The daily standup moved to 9:30 am in the small room.")], days_ago=1
    )
    result = container.retrieval().context(tenant, ContextRequest(query="when is the daily standup?", dry_run=True))
    assert [m.label for m in result.memories][:2] == ["Standup moved", "Standup time"]


def test_a_cold_memory_relevant_to_a_query_comes_back_without_a_high_cosine(configured, tenant, local_embedder, s3):
    add(tenant, local_embedder, [DEPLOY], days_ago=60)
    add(tenant, local_embedder, OTHERS, days_ago=0)
    scan(tenant)
    assert tiers(tenant)["Autoscaling"] == ("cold", "")  # a stub: label, embedding, lexical form

    query = "does the cluster add pods when CPU is busy?"
    dry = container.retrieval().context(tenant, ContextRequest(query=query, dry_run=True))
    (listed,) = dry.reactivated
    assert listed.label == "Autoscaling" and not listed.restored
    assert listed.similarity < 0.80  # relative to the query's candidates, not the absolute threshold
    shown = next(m for m in dry.memories if m.label == "Autoscaling")
    assert shown.definition == DEPLOY[1]  # the dry run shows what would be injected …
    assert tiers(tenant)["Autoscaling"] == ("cold", "")  # … and changes nothing

    result = container.retrieval().context(tenant, ContextRequest(query=query))
    assert [(r.label, r.restored) for r in result.reactivated] == [("Autoscaling", True)]
    assert "Autoscaling" in [m.label for m in result.memories]
    assert tiers(tenant)["Autoscaling"] == ("hot", DEPLOY[1])
    with container.database().tenant_tx(tenant) as conn:
        audit = conn.execute("SELECT reason FROM audit_log WHERE action = 'reactivated'").fetchall()
    assert len(audit) == 1 and audit[0]["reason"].startswith("among the query's best evidence")


def test_an_unrelated_query_reactivates_nothing_and_brings_back_no_old_memory(configured, tenant, local_embedder, s3):
    add(tenant, local_embedder, [DEPLOY, *OTHERS], days_ago=60)
    add(tenant, local_embedder, [("Release notes", "Release notes are written by the product team.")], days_ago=0)
    scan(tenant)
    before = tiers(tenant)
    assert {t for label, (t, _) in before.items() if label != "Release notes"} == {"cold"}
    status, result = call_api("POST", "/v1/context", tenant, {"query": "tax law for small bakeries"})
    assert status == 200 and result["reactivated"] == []
    assert {m["label"] for m in result["memories"]} <= {"Release notes"}
    assert tiers(tenant) == before


def test_forgotten_hot_memories_unrelated_to_the_query_stay_out(configured, tenant, local_embedder):
    add(tenant, local_embedder, OTHERS, days_ago=60)
    add(tenant, local_embedder, [DEPLOY], days_ago=0)
    result = container.retrieval().context(tenant, ContextRequest(query="kubernetes pod autoscaler", dry_run=True))
    assert [m.label for m in result.memories] == ["Autoscaling"]


def test_bm25_ranking_matches_a_hand_computed_case(configured, tenant, local_embedder):
    add(
        tenant,
        local_embedder,
        [("Zebra", "zebra zebra stripes"), ("Lion", "lion with a zebra"), ("Ocean", "deep blue water")],
        days_ago=0,
    )
    rows = container.stores().reads.text_rank(tenant, "zebra", [], [], k=10, cap=300, params=BM25Params())
    with container.database().tenant_tx(tenant) as conn:
        names = {r["id"]: r["label"] for r in conn.execute("SELECT id, label FROM memories")}
    scores = {names[r["id"]]: float(r["score"]) for r in rows}
    # 'zebra':1,2,3 'stripe':4 | 'lion':1,2 'zebra':5 | 'ocean' 'deep' 'blue' 'water': lengths 2, 2, 4
    n, df, avglen, k1, b = 3, 2, 8 / 3, 1.5, 0.75
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))

    def bm25(tf: int, length: int) -> float:
        return idf * tf / (tf + k1 * (1 - b + b * length / avglen))

    assert scores == pytest.approx({"Zebra": bm25(3, 2), "Lion": bm25(1, 2)}, rel=1e-5)
    assert [names[r["id"]] for r in rows] == ["Zebra", "Lion"]
    # the bounded gathering and the exact ranking agree here
    exact = container.stores().reads.text_rank(tenant, "zebra", [], [], k=10, cap=None, params=BM25Params())
    assert [r["id"] for r in exact] == [r["id"] for r in rows]


def test_a_synonym_counts_at_its_lower_weight(configured, tenant, local_embedder):
    add(tenant, local_embedder, [("Zebra", "zebra stripes"), ("Horse", "horse stable")], days_ago=0)
    rows = container.stores().reads.text_rank(
        tenant, "zebra", ["horse"], [], k=10, cap=300, params=BM25Params(extra_weight=0.5)
    )
    with container.database().tenant_tx(tenant) as conn:
        names = {r["id"]: r["label"] for r in conn.execute("SELECT id, label FROM memories")}
    scores = {names[r["id"]]: float(r["score"]) for r in rows}
    assert scores["Horse"] == pytest.approx(0.5 * scores["Zebra"], rel=1e-5)  # same tf, df and length
