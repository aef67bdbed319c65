"""The read path's candidates (S6.3, S6.4's inputs): each search's scores per memory, the
candidate pool's rows as scored candidates with their band and composite trust (S5, S7), cold
stubs as candidates, and the check of a short vector answer. ``contextos.services.retrieval`` runs
the searches."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

from contextos.decay import band_of
from contextos.models import Band, NearMiss
from contextos.observability import logger, metrics
from contextos.ports.reads import SearchReads
from contextos.ports.rows import PoolRow, TextHit, VectorHit
from contextos.scoring import Candidate, among_best_evidence, calibrated_relevance
from contextos.settings import Settings
from contextos.trust import composite_trust


def method_scores(
    vector_rows: Sequence[VectorHit], text_rows: Sequence[TextHit]
) -> tuple[dict[UUID, dict[str, float]], dict[UUID, float]]:
    """Per memory, the score each search gave it (BM25 relative to the query's best match, so every
    recipe reads [0, 1]; a cold stub flagged ``cold``), and the vector hits' cosines (the pool does
    not recompute them)."""
    found: dict[UUID, dict[str, float]] = {}
    cosines = {hit["id"]: float(hit["vector_sim"]) for hit in vector_rows}
    for hit in vector_rows:
        found.setdefault(hit["id"], {})["vector"] = max(float(hit["vector_sim"]), 0.0)
    top_score = max((float(r["score"]) for r in text_rows), default=0.0) or 1.0
    for match in text_rows:
        scores = found.setdefault(match["id"], {})
        scores["text"] = float(match["score"]) / top_score
        scores["bm25"] = float(match["score"])
        if match.get("cold"):
            scores["cold"] = 1.0  # a cold stub: the read path takes it out of the hot pool
    return found, cosines


def add_pool_scores(
    rows: list[PoolRow], found: dict[UUID, dict[str, float]], cosines: dict[UUID, float], community_bonus: float
) -> None:
    """The candidate pool's part of the scores: each row's cosine where the pool did not read it,
    the graph walk's weight, and the S9 community bonus (kept apart from the methods, so it does
    not also earn the multi-method bonus)."""
    for row in rows:
        if row["vector_sim"] is None:
            row["vector_sim"] = cosines[row["id"]]
        if row["pinned"]:
            continue
        scores = found.setdefault(row["id"], {})
        if row["graph_weight"] > 0:
            scores["graph"] = max(scores.get("graph", 0.0), min(float(row["graph_weight"]), 1.0))
        if row["community"]:
            scores["community"] = community_bonus


def hot_candidates(
    rows: list[dict],
    found: dict[UUID, dict[str, float]],
    settings: Settings,
    *,
    pinned: bool = False,
    min_trust: float | None = None,
    historical: bool = False,
    cold: list[Candidate] | None = None,
    dropped: list[NearMiss] | None = None,
) -> list[Candidate]:
    """Bands (S5): strong always; fading, critical and forgotten ones only when they are among
    the query's best evidence (`among_best_evidence`: forgetting demotes). Pinned
    ``always_load`` memories are in context whatever their band; a historical read shows what
    was believed then, whatever its strength now. Composite trust (S7) for each, and
    ``min_trust`` leaves out the rest. ``dropped`` (a dry run's) receives what the band filter cut."""
    cfg, decay, governance = settings.retrieval, settings.decay, settings.governance
    keep_all_bands = pinned or historical
    now = datetime.now(UTC)
    out = []
    for row in rows:
        band = band_of(row["strength"], decay)
        methods = found.get(row["id"], {})
        vector = max(float(row["vector_sim"]), 0.0)
        trust = composite_trust(
            float(row["base_trust"]),
            int(row.get("corroborations") or 0),
            int(row["access_count"]),
            float(row["strength"]),
            governance,
        )
        if min_trust is not None and trust < min_trust:
            continue
        out.append(
            Candidate(
                id=row["id"],
                strength=float(row["strength"]),
                hours_since_access=(now - row["last_accessed_at"]).total_seconds() / 3600.0,
                importance=row["importance"],
                access_count=row["access_count"],
                vector=vector,
                text=methods.get("text", 0.0),
                graph=min(methods.get("graph", 0.0) + methods.get("community", 0.0), 1.0),
                methods=set(methods) - {"community", "bm25"},
                community=1.0 if "community" in methods else 0.0,
                payload=row | {"band": band},
                trust=trust,
                bm25=methods.get("bm25", 0.0),
            )
        )
    out += [c for c in cold or [] if min_trust is None or c.trust >= min_trust]
    if keep_all_bands:
        return out
    kept = among_best_evidence(out, cfg)
    if dropped is not None and len(kept) < len(out):
        ids = {c.id for c in kept}
        dropped += [
            NearMiss(
                id=c.id,
                label=c.payload["label"],
                relevance=calibrated_relevance(c.vector, c.bm25, cfg),
                reason="band",
            )
            for c in out
            if c.id not in ids
        ]
    return kept


def stub_candidates(near: list[dict], text: dict[UUID, float], bm25: dict[UUID, float]) -> list[Candidate]:
    """Cold stubs as candidates (band forgotten), with their cosine and, when the text search found
    them, its scores (``text`` relative to the best match, ``bm25`` raw)."""
    now = datetime.now(UTC)
    out = []
    for row in near:
        methods = {"vector"} | ({"text"} if row["id"] in text else set())
        out.append(
            Candidate(
                id=row["id"],
                strength=0.0,
                hours_since_access=(now - row["last_accessed_at"]).total_seconds() / 3600.0,
                importance=row["importance"],
                access_count=row["access_count"],
                vector=max(float(row["similarity"]), 0.0),
                text=text.get(row["id"], 0.0),
                bm25=bm25.get(row["id"], 0.0),
                methods=methods,
                payload=row | {"band": Band.forgotten, "definition": "", "sources": [], "excerpts": [], "cold": True},
                trust=float(row["base_trust"]),
            )
        )
    return out


def check_short(reads: SearchReads, tenant_id: str, *, returned: int, k: int) -> None:
    """S6: the vector search returns k rows whenever k exist in scope. A short answer where more
    rows were searchable (a plan that filtered after an ANN scan, an index that lost rows) is logged
    and counted, never silent; asked only after a short answer, counting at most k rows."""
    held = reads.searchable_rows(tenant_id, at_most=k)
    if returned >= held:
        return
    logger.warning(
        "vector search came up short",
        extra={
            "tenant_id": tenant_id,
            "returned": returned,
            "searchable": held,
            "k": k,
            "reader": type(reads).__name__,
        },
    )
    metrics.add_metric(name="VectorSearchShort", unit="Count", value=1)
