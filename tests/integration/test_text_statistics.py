"""The scan's text statistics in one ts_stat pass: the same common lexemes, BM25 frequencies and
mean vector length that counting each on its own gives."""

import pytest
from contextos import container

from tests.integration.test_merging import candidates, store_concepts
from tests.integration.test_text_search import SPECS

# Counted directly, the way each statistic is defined (the oracle, not the store's SQL).
EXPECTED_TENANT = """SELECT count(*) AS docs, coalesce(avg(length(search_tsv)), 1)::real AS avg_length
                     FROM memories WHERE tenant_id = %(t)s AND state = 'active' AND tier = 'hot'"""
EXPECTED_WORDS = """SELECT word, ndoc FROM ts_stat(format(
                        'SELECT search_tsv FROM memories WHERE tenant_id = %%L AND state = %%L AND tier = %%L',
                        %(t)s::text, 'active', 'hot'))
                    ORDER BY word"""


@pytest.fixture
def seeded(configured, tenant, local_embedder, monkeypatch):
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__COMMON_LEXEME_MIN_MEMORIES", "4")
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__COMMON_LEXEME_SHARE", "0.5")
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__TEXT_STATS_MIN_MEMORIES", "4")
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__TEXT_STATS_MIN_DOCS", "2")
    container.reset()
    store_concepts(container.stores(), tenant, candidates(local_embedder, SPECS))
    return tenant


def stored(tenant: str) -> dict:
    with container.database().tenant_tx(tenant) as conn:
        common = conn.execute(
            "SELECT lexeme, share FROM text_common_lexemes WHERE tenant_id = %s ORDER BY lexeme", [tenant]
        )
        frequencies = conn.execute(
            "SELECT lexeme, docs FROM text_lexeme_stats WHERE tenant_id = %s ORDER BY lexeme", [tenant]
        )
        counted = conn.execute("SELECT docs, avg_length FROM text_tenant_stats WHERE tenant_id = %s", [tenant])
        return {
            "common": [(r["lexeme"], r["share"]) for r in common],
            "frequencies": [(r["lexeme"], r["docs"]) for r in frequencies],
            "tenant": [(r["docs"], r["avg_length"]) for r in counted],
        }


def test_one_pass_stores_what_each_statistic_counts_on_its_own(seeded):
    store = container.lifecycle_store()
    common, frequencies = store.refresh_text_statistics(seeded)
    with container.database().tenant_tx(seeded) as conn:
        hot = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [seeded]).fetchone()["hot_memories"]
        words = [(r["word"], r["ndoc"]) for r in conn.execute(EXPECTED_WORDS, {"t": seeded})]
        tenant = conn.execute(EXPECTED_TENANT, {"t": seeded}).fetchone()
    got = stored(seeded)
    assert hot == len(SPECS)
    assert [w for w, _ in got["common"]] == [w for w, n in words if n >= 0.5 * hot]
    assert got["common"] and common == len(got["common"])
    assert got["frequencies"] == [(w, n) for w, n in words if n >= 2] and frequencies == len(got["frequencies"])
    assert got["tenant"] == [(tenant["docs"], tenant["avg_length"])]
    # Each alone writes its own tables and leaves the other's as they were.
    store.refresh_common_lexemes(seeded)
    store.refresh_text_stats(seeded)
    assert stored(seeded) == got


def test_a_tenant_below_both_minimums_keeps_no_statistics(seeded, monkeypatch):
    container.lifecycle_store().refresh_text_statistics(seeded)
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__COMMON_LEXEME_MIN_MEMORIES", "5")
    monkeypatch.setenv("CONTEXTOS_LIFECYCLE__TEXT_STATS_MIN_MEMORIES", "5")
    container.reset()
    assert container.lifecycle_store().refresh_text_statistics(seeded) == (0, 0)
    assert stored(seeded) == {"common": [], "frequencies": [], "tenant": []}
