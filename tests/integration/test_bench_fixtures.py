"""The benchmarks' one bulk loader (benchmarks/fixtures.py) writes what production writes: every
loaded memory has its vector row with the band keys of its embedding and exactly those band rows,
and a near duplicate of a loaded memory merges into it through the real admission path."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest
from contextos import container
from contextos.lsh import BANDS, sketch

from benchmarks.fixtures import Corpus, bulk_load, corpus, percentile, timed

pytestmark = pytest.mark.integration


@pytest.fixture
def store(configured):
    return container.stores()


def learned_now(data: Corpus) -> Corpus:
    """The corpus learned today: the suite's lifecycle scans cover every tenant, and a backdated
    memory here would be forgotten (and archived) under another test's scan."""
    return replace(data, at=[datetime.now(UTC)] * len(data.at))


def test_the_loaded_memories_carry_their_vectors_band_keys_and_band_rows(store, tenant):
    aged = corpus(60, np.random.default_rng(3))
    assert sum(1 for at in aged.at if (datetime.now(UTC) - at).days >= 39) == 3  # one in twenty, 40 days ago
    data = learned_now(aged)
    ids = bulk_load(store, tenant, data, batch=25)
    assert len(ids) == 60 and len(set(ids)) == 60
    expected = sketch([c.embedding for c in data.candidates]).band_keys
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute(
            """SELECT v.memory_id, v.band_keys, v.embedder_id,
                      (SELECT array_agg(b.band_key ORDER BY b.band_key) FROM memory_vector_bands b
                       WHERE b.tenant_id = v.tenant_id AND b.memory_id = v.memory_id) AS band_rows
               FROM memory_vectors v"""
        ).fetchall()
    by_id = {r["memory_id"]: r for r in rows}
    assert set(by_id) == set(ids)
    for memory_id, keys in zip(ids, expected, strict=True):
        row = by_id[memory_id]
        assert len(keys) == BANDS
        assert sorted(row["band_keys"]) == sorted(keys) == row["band_rows"]
        assert row["embedder_id"] == "bench"


def test_a_near_duplicate_of_a_loaded_memory_merges_into_it(store, tenant):
    data = learned_now(corpus(20, np.random.default_rng(5), near_duplicate_share=0.0))
    ids = bulk_load(store, tenant, data)
    twin = data.candidates[7].model_copy(update={"norm_key": "memory 7 retold"})  # its word and id: a near duplicate
    record, _ = store.documents.create_document(
        tenant, content_hash=uuid.uuid4().hex, filename=None, content_type=None, provenance="user_upload", size_bytes=1
    )
    result = store.admission.store_document_concepts(
        tenant, record.id, [twin], embedder_id="bench", source_type="text", domain="general", counts={}
    )
    assert result.merged == 1 and result.created == 0
    assert result.memory_ids == [ids[7]]


def test_the_timing_helpers_measure_and_rank():
    elapsed, value = timed(sum, [1, 2, 3])
    assert value == 6 and elapsed >= 0
    assert percentile([5.0, 1.0, 3.0, 4.0, 2.0], 0.5) == 3.0
    assert percentile(list(map(float, range(1, 101))), 0.95) == 95.0
