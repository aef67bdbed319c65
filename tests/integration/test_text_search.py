"""S6.2's text search: every phrase in one call, all-words matches first, hostile text is only words,
and the words most of a large tenant's memories hold are left out (migration 0015)."""

import pytest
from contextos import container

from tests.integration.test_merging import candidates, store_concepts

SPECS = [
    ("Billing ledger", "The billing ledger team reconciles invoices every night.", "fact"),
    ("Ledger export", "The ledger export runs for the team on Fridays.", "fact"),
    ("Billing alerts", "Billing alerts page the team when payments fail.", "fact"),
    ("Zebra rollout", "The zebra rollout moves the team's canary to the new cluster.", "decision"),
]


@pytest.fixture
def seeded(configured, tenant, local_embedder):
    store_concepts(container.stores(), tenant, candidates(local_embedder, SPECS))
    return tenant


def labels(tenant: str, phrases: list[list[str]], k: int = 10) -> list[tuple[int, str]]:
    rows = container.stores().reads.text_search(tenant, phrases, k=k, cap=100)
    with container.database().tenant_tx(tenant) as conn:
        names = {
            r["id"]: r["label"]
            for r in conn.execute("SELECT id, label FROM memories WHERE id = ANY(%s)", [[r["id"] for r in rows]])
        }
    return [(r["phrase_no"], names[r["id"]]) for r in rows]


def test_memories_holding_every_word_come_first_then_those_holding_some(seeded):
    found = labels(seeded, [["billing ledger"]])
    assert found[0] == (1, "Billing ledger")  # every word, verbatim
    assert {label for _, label in found[1:]} == {"Ledger export", "Billing alerts"}  # some of the words


def test_every_phrase_is_answered_in_one_call_each_row_tagged_with_its_phrase(seeded):
    found = labels(seeded, [["zebra rollout"], ["ledger export"]], k=1)
    assert found == [(1, "Zebra rollout"), (2, "Ledger export")]


def test_a_synonym_holding_all_its_words_counts_as_the_phrase(seeded):
    assert labels(seeded, [["crash", "payments fail"]]) == [(1, "Billing alerts")]


@pytest.mark.parametrize(
    "hostile",
    ["zebra & !ledger | x:*", "zebra') OR 1=1 --", "O'Reilly \\ zebra", "zebra <-> (ledger", "':* & zebra"],
)
def test_query_text_is_only_ever_words_never_tsquery_syntax(seeded, hostile):
    assert (1, "Zebra rollout") in labels(seeded, [[hostile]])


def test_words_most_of_a_large_tenants_memories_hold_are_left_out(seeded, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__COMMON_LEXEME_MIN_MEMORIES", "4")
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__COMMON_LEXEME_SHARE", "0.75")
    container.reset()
    assert labels(seeded, [["team"]])  # before the count, "team" is searched like any word
    assert container.lifecycle_store().refresh_common_lexemes(seeded) == 1  # every memory holds "team"
    assert labels(seeded, [["team"]]) == []  # a phrase of common words only says nothing
    assert labels(seeded, [["zebra team"]]) == [(1, "Zebra rollout")]  # the rest of a phrase still counts


def test_a_small_tenant_keeps_every_word_and_the_scan_recounts_each_time(seeded, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__COMMON_LEXEME_SHARE", "0.75")
    container.reset()  # the default minimum size (20,000 memories) is far above this tenant
    assert container.lifecycle().run(tenants=[seeded]).common_lexemes == 0
    assert labels(seeded, [["team"]])
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__COMMON_LEXEME_MIN_MEMORIES", "4")
    container.reset()
    assert container.lifecycle().run(tenants=[seeded]).common_lexemes == 1
    with container.database().tenant_tx(seeded) as conn:
        assert [r["lexeme"] for r in conn.execute("SELECT lexeme FROM text_common_lexemes")] == ["team"]
    with container.database().tenant_tx("other-" + seeded) as conn:  # tenant-scoped like every table
        assert conn.execute("SELECT count(*) AS n FROM text_common_lexemes").fetchone()["n"] == 0
