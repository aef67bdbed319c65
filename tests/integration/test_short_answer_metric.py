"""A vector search that returns fewer rows than k while more were searchable is logged and counted
(``VectorSearchShort``), never silent; a tenant that simply holds fewer than k memories is not."""

from __future__ import annotations

import pytest
from contextos import container
from contextos.models import ContextRequest
from contextos.observability import metrics
from contextos.scopes import ScopeFilter
from contextos.store.scoped_reads import ScopedReads

from tests.integration.test_merging import candidates
from tests.memory_writer import add_memories

METRIC = "VectorSearchShort"


def seed(tenant: str, embedder, n: int) -> list:
    specs = [(f"Release topic {i}", f"Note {i} about release trains and deployment windows.", "fact") for i in range(n)]
    return add_memories(container.stores(), tenant, candidates(embedder, specs), embedder_id="local")


def shorts() -> list[float]:
    return list(metrics.metric_set.get(METRIC, {}).get("Value", []))


@pytest.fixture(autouse=True)
def clean_metrics():
    metrics.clear_metrics()
    yield
    metrics.clear_metrics()


def ask(tenant: str, embedder, scope: ScopeFilter | None = None):
    [vector] = embedder.embed(["release trains and deployment windows"])
    request = ContextRequest(query="release trains", dry_run=True, scope=scope)
    return container.retrieval().context(tenant, request, query_vector=vector)


def test_a_forced_short_answer_is_logged_and_counted(configured, tenant, local_embedder, monkeypatch, caplog):
    seed(tenant, local_embedder, 30)  # more than vector_k (20)
    ask(tenant, local_embedder)
    assert shorts() == []  # a full answer: nothing to report

    service = container.retrieval()
    real = service.store.vector_search
    monkeypatch.setattr(service.store, "vector_search", lambda *a, **kw: real(*a, **kw)[:3])
    ask(tenant, local_embedder)
    assert shorts() == [1.0]
    [record] = [r for r in caplog.records if r.getMessage() == "vector search came up short"]
    assert (record.levelname, record.returned, record.searchable, record.k) == ("WARNING", 3, 20, 20)


def test_a_forced_short_scoped_answer_is_counted(configured, tenant, local_embedder, monkeypatch):
    ids = seed(tenant, local_embedder, 30)
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("UPDATE memories SET user_id = 'ann' WHERE id = ANY(%s)", [ids[:25]])
    real = ScopedReads.vector_search
    monkeypatch.setattr(ScopedReads, "vector_search", lambda self, *a, **kw: real(self, *a, **kw)[:4])
    ask(tenant, local_embedder, ScopeFilter(user_id="ann"))
    assert shorts() == [1.0]


def test_a_tenant_with_fewer_than_k_memories_is_not_a_short_answer(configured, tenant, local_embedder):
    seed(tenant, local_embedder, 6)
    result = ask(tenant, local_embedder)
    assert result.memories and shorts() == []
