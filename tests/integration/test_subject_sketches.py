"""The contradiction gate's subject probe reads each sharing memory's LSH sketch from the term index
(migration 0037) and skips the vectors that cannot reach the similarity floor: the neighbours it
returns are exactly the ones the exact cosine gives, and the sketch follows the memory's vector."""

from __future__ import annotations

import uuid

import numpy as np
from contextos import container
from contextos.config import GovernanceSettings
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.lsh import max_hamming
from contextos.models import BASE_TRUST, MemoryCandidate, Provenance
from contextos.normalization import norm_key
from contextos.store import contradictions
from contextos.store.bands import band_sketch
from contextos.store.dialect import get_dialect
from contextos.store.stores import Stores

DIM = 384


def candidate(label: str, vector: np.ndarray, *, importance: int = 5, definition: str | None = None):
    return MemoryCandidate(
        norm_key=norm_key(label, get_settings().extraction.generic_modifiers),
        label=label,
        definition=definition or f"{label} is described here in one plain sentence.",
        type="fact",
        importance=importance,
        related_keys=[],
        embedding=vector.tolist(),
        decay_rate=decay_rate(importance, "fact", get_settings().decay),
        provenance=Provenance.user_upload,
        base_trust=BASE_TRUST[Provenance.user_upload],
    )


def at_cosine(probe: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    """A unit vector at exactly ``cosine`` to the unit vector ``probe``."""
    noise = rng.standard_normal(DIM)
    noise -= noise.dot(probe) * probe
    noise /= np.linalg.norm(noise)
    return cosine * probe + np.sqrt(1 - cosine**2) * noise


def admit(store, tenant: str, cands: list[MemoryCandidate]) -> None:
    record, _ = store.documents.create_document(
        tenant, content_hash=uuid.uuid4().hex, filename=None, content_type=None, provenance="user_upload", size_bytes=1
    )
    store.admission.store_document_concepts(
        tenant, record.id, cands, embedder_id="test", source_type="text", domain="general", counts={}
    )


def test_the_probe_returns_exactly_the_neighbours_the_exact_cosine_gives(configured, tenant):
    """Memories sharing the candidate's subject at cosines from 0.30 to 0.70 around the floors (0.5
    for update links, 0.6 for the judge) and unrelated ones: the probe keeps every one at or above the
    lowest floor and nothing else, while the sketches alone already rule most of the far ones out."""
    store = container.stores()
    rng = np.random.default_rng(37)
    probe = rng.standard_normal(DIM)
    probe /= np.linalg.norm(probe)
    cosines = [round(0.30 + 0.02 * i, 2) for i in range(21)]
    near = [candidate(f"Deploy timeout variant{chr(97 + i)}", at_cosine(probe, c, rng)) for i, c in enumerate(cosines)]
    far = []
    for i in range(40):
        v = rng.standard_normal(DIM)
        far.append(candidate(f"Deploy timeout other{chr(97 + i // 26)}{chr(97 + i % 26)}", v / np.linalg.norm(v)))
    admit(store, tenant, near[:10] + far[:20])
    admit(store, tenant, near[10:] + far[20:])

    settings = GovernanceSettings(contradiction_top_k=100, contradiction_exact_scan_max_rows=0)
    new = candidate("Deploy timeout budget", probe)
    with container.database().tenant_tx(tenant) as conn:
        hot = contradictions.hot_count(conn, tenant)
        rows = contradictions.neighbours(conn, tenant, [new], [new.norm_key], hot, get_dialect("postgres"), settings)
        sketches = conn.execute(
            """SELECT st.sketch::text AS sketch, v.band_keys FROM memory_subject_terms st
               JOIN memory_vectors v ON v.tenant_id = st.tenant_id AND v.memory_id = st.memory_id
               WHERE st.tenant_id = %s AND st.term = 'deploy timeout'""",
            [tenant],
        ).fetchall()
    lowest = min(settings.contradiction_similarity_floor, settings.update_similarity_floor)
    found = sorted(round(float(r["similarity"]), 4) for r in rows)
    assert found == sorted(c for c in cosines if c >= lowest - 1e-9)
    assert {r["judged"] for r in rows if r["similarity"] < settings.contradiction_similarity_floor} == {False}
    # A candidate with no change cue reads nothing below the judge's floor (it cannot update anything).
    floor = settings.contradiction_similarity_floor
    with container.database().tenant_tx(tenant) as conn:
        cueless = contradictions.neighbours(
            conn, tenant, [new], [new.norm_key], hot, get_dialect("postgres"), settings, [floor]
        )
    expected = {r["id"] for r in rows if r["similarity"] >= floor}
    assert {r["id"] for r in cueless} == expected and len(expected) >= 5

    # The sketch in the index is the one Python computes from the band keys (SQL and Python agree) ...
    assert len(sketches) == len(near) + len(far)
    assert all(r["sketch"] == band_sketch(r["band_keys"]) for r in sketches)
    # ... and it rules most unrelated memories out before their vectors are read.
    mine = band_sketch(next(iter(contradictions_sketch(new))))
    distances = [sum(a != b for a, b in zip(mine, r["sketch"], strict=True)) for r in sketches]
    assert sum(d > max_hamming(lowest) for d in distances) >= 30


def contradictions_sketch(c: MemoryCandidate) -> list[list[int]]:
    from contextos.lsh import sketch

    return sketch(np.asarray([c.embedding], dtype=np.float32)).band_keys


def test_a_merge_that_replaces_the_vector_rewrites_the_sketch(configured, tenant):
    settings = get_settings()
    store = Stores.over(container.database(), settings.decay, settings.merge)  # no gate: a plain key merge
    rng = np.random.default_rng(5)
    first, second = (v / np.linalg.norm(v) for v in rng.standard_normal((2, DIM)))
    admit(store, tenant, [candidate("Payments retry budget", first, importance=4)])
    # the same key, more important: the merge keeps the newer definition and its vector
    admit(
        store,
        tenant,
        [candidate("Payments retry budget", second, importance=9, definition="The payments retry budget is 3.")],
    )
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute(
            """SELECT st.memory_id, st.sketch::text AS sketch, v.band_keys FROM memory_subject_terms st
               JOIN memory_vectors v ON v.tenant_id = st.tenant_id AND v.memory_id = st.memory_id
               WHERE st.tenant_id = %s""",
            [tenant],
        ).fetchall()
    (new_keys,) = contradictions_sketch(candidate("x", second))
    assert len({r["memory_id"] for r in rows}) == 1  # one memory: the second admission merged
    assert all(r["band_keys"] == new_keys for r in rows)  # and replaced its vector
    assert all(r["sketch"] == band_sketch(new_keys) for r in rows)
