"""S6.2: vector, text and graph each find something the other two miss."""

import pytest
from contextos import container
from contextos.models import ContextRequest

from tests.integration.test_merging import candidates, store_concepts

CAR = ("Automobile maintenance", "Change the car's engine oil every ten thousand kilometres.", "fact")
INVOICE = ("Garage invoice", "Invoices from Bob's garage are filed under expenses-2024 by the bookkeeper.", "fact")
QUARANTINE = ("Quarantine rule", "Files that fail the virus scan go to the zx-7731 holding area.", "rule")
DISTRACTORS = [
    ("Zx-7730 naming", "zx-7730 is the old naming scheme for zx volumes.", "fact"),
    ("Zx-7732 volume", "The zx-7732 volume stores zx archives for the team.", "fact"),
    ("Zx prefixes", "Zx prefixes like zx-7729 mark archive volumes.", "fact"),
    ("Payments team", "The payments team owns the checkout service.", "entity"),
    ("On-call rota", "The on-call rota changes every Monday morning.", "fact"),
]


@pytest.fixture
def memories(configured, tenant, local_embedder, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_RETRIEVAL__VECTOR_K", "2")
    monkeypatch.setenv("CONTEXTOS_RETRIEVAL__TEXT_K", "3")
    container.reset()
    store = container.stores()
    store_concepts(
        store,
        tenant,
        candidates(local_embedder, [CAR, INVOICE], related={"Automobile maintenance": ["Garage invoice"]}),
    )
    for spec in [QUARANTINE, *DISTRACTORS]:
        store_concepts(store, tenant, candidates(local_embedder, [spec]))
    return tenant


def methods_of(tenant: str, query: str) -> dict[str, list[str]]:
    # which search found each candidate, before the relevance floor (which reads cosine and BM25
    # only: a memory the graph alone found, or a paraphrase in a tiny tenant, falls below it)
    result = container.retrieval().context(tenant, ContextRequest(query=query, dry_run=True, min_relevance=0))
    return {m.label: m.score.methods for m in result.memories}


def test_the_vector_search_finds_a_paraphrase_that_shares_no_words(memories):
    found = methods_of(memories, "how often should I service my vehicle's motor lubricant")
    assert found["Automobile maintenance"] == ["vector"]


def test_the_text_search_finds_an_exact_rare_term_the_vectors_rank_below_look_alikes(memories):
    found = methods_of(memories, "zx-7731")
    assert found["Quarantine rule"] == ["text"]


def test_the_graph_finds_a_memory_only_linked_to_a_hit(memories):
    found = methods_of(memories, "how often should I service my vehicle's motor lubricant")
    assert found["Garage invoice"] == ["graph"]


def test_a_memory_found_by_several_methods_gets_the_bonus(memories):
    request = ContextRequest(query="automobile maintenance", dry_run=True, recipe="standard")  # the seed formula's
    result = container.retrieval().context(memories, request)
    car = next(m for m in result.memories if m.label == "Automobile maintenance")
    assert {"vector", "text"} <= set(car.score.methods)
    assert car.score.bonus == pytest.approx(0.05 * (len(car.score.methods) - 1))


@pytest.mark.parametrize("query", ["C. S. Lewis", "the U.S.", "J.K. Rowling", "a", "!!!", "x y z"])
def test_queries_made_of_initials_or_punctuation_still_answer(memories, query):
    result = container.retrieval().context(memories, ContextRequest(query=query, dry_run=True))
    assert result.query == query
