"""Present-time reads (S6): the searches, the candidate pool, reinforcement of what was injected, and
a memory's detail and sources.

Each method takes the tenant explicitly and filters on it even though row-level security
would too: RLS is the second wall, not the first.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import cast
from uuid import UUID

from contextos.config import DecaySettings
from contextos.errors import NotFound
from contextos.ports.reads import BM25Params, PoolRequest, SearchReads
from contextos.ports.rows import (
    MemoryDetail,
    MemorySourceRow,
    PhraseHit,
    PoolRow,
    SubjectPair,
    TextHit,
    VectorHit,
    WalkRow,
    rows_of,
)
from contextos.scopes import ScopeFilter
from contextos.store.db import Database
from contextos.store.history import HistoricalReads, candidate_pool_sql, graph_walk_sql, pool_params, walk_params
from contextos.store.predicates import live_now
from contextos.store.scoped_reads import ScopedHistoricalReads, ScopedReads
from contextos.store.sql import band_case, current_strength, next_transition, reinforced, weibull_scale
from contextos.store.text_search import bm25_call, phrases_call, rank_text, search_phrases
from pgvector import Vector


def _vector_sql(*, exact: bool, own_index_of: str | None = None) -> str:
    """The vector search over both segments. ``exact`` orders the indexed segment by an expression
    the HNSW index cannot serve (``distance + 0.0``), so no plan of this text, cached or not, can
    read the index and filter after it. ``own_index_of`` (a tenant literal) spells the tenant out in
    the indexed segment, so that every plan of the text can match the tenant's own partial index
    (store/vector_indexes.py); without it the ANN is the shared index, filtered after its scan."""
    indexed_order = "(v.embedding <=> %(q)s) + 0.0" if exact else "v.embedding <=> %(q)s"
    indexed_tenant = own_index_of or "%(tenant)s"
    return f"""
            SELECT memory_id AS id, 1.0 - min(distance) AS vector_sim FROM (
                (SELECT v.memory_id, v.embedding <=> %(q)s AS distance
                 FROM memory_vectors v
                 WHERE v.tenant_id = {indexed_tenant} AND v.searchable AND v.indexed
                 ORDER BY {indexed_order} LIMIT %(k)s)
                UNION ALL
                (SELECT v.memory_id, v.embedding <=> %(q)s AS distance
                 FROM memory_vectors v
                 WHERE v.tenant_id = %(tenant)s AND v.searchable AND NOT v.indexed
                 ORDER BY (v.embedding <=> %(q)s) + 0.0 LIMIT %(k)s)
            ) segments
            GROUP BY memory_id
            ORDER BY min(distance), memory_id
            LIMIT %(k)s"""


class ReadStore:
    def __init__(self, db: Database, decay: DecaySettings) -> None:
        self.db = db
        self.decay = decay
        # tenant → (hot memories, its own ANN index or None, read at monotonic s)
        self._scope_sizes: dict[str, tuple[int, str | None, float]] = {}
        self._searchable: dict[str, tuple[int, float]] = {}  # tenant → (hot + cold memories, read at)

    def reader(
        self,
        *,
        as_of: datetime | None,
        scope: ScopeFilter | None,
        exact_scan_max_rows: int,
        scope_cache_s: float,
    ) -> SearchReads:
        """These reads within ``scope`` (S11), answered as of ``as_of`` (S7), or both; the store
        itself when neither is asked. (The scoped readers return their rows as plain dicts with the
        port's keys.)"""
        if scope is not None and scope.empty:
            scope = None
        if as_of is None:
            if scope is None:
                return self
            return cast(SearchReads, ScopedReads(self, scope, exact_scan_max_rows, scope_cache_s))
        history = HistoricalReads(self.db, as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC))
        if scope is None:
            return cast(SearchReads, history)
        return cast(SearchReads, ScopedHistoricalReads(history, scope, exact_scan_max_rows))

    def sources_of_memory(self, tenant_id: str, memory_id: UUID) -> list[MemorySourceRow]:
        """Every occurrence behind a memory (memory → documents and sessions)."""
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT i.document_id, d.filename, i.session_id, i.message_from, i.message_to, i.label, i.definition,
                          i.importance, i.created_at
                   FROM memory_items i LEFT JOIN documents d ON d.tenant_id = i.tenant_id AND d.id = i.document_id
                   WHERE i.tenant_id = %s AND i.memory_id = %s ORDER BY i.created_at""",
                [tenant_id, memory_id],
            ).fetchall()
        return rows_of(MemorySourceRow, rows)

    # -- retrieval -------------------------------------------------------------------------
    def vector_search(
        self,
        tenant_id: str,
        embedding: Sequence[float],
        *,
        k: int,
        ef_search: int,
        exact_scan_max_rows: int = 20_000,
        scope_cache_s: float = 0.0,
    ) -> list[VectorHit]:
        """Top-k hot active memories by cosine, as ``(id, vector_sim)``: ANN over the indexed segment,
        exact over the fresh one (the candidate pool reads the rows).

        pgvector 0.6 filters ANN results after the index scan (docs/design.md, Appendix A): a small tenant
        beside a large one can get fewer than k rows. So a tenant without an index of its own
        (store/vector_indexes.py) and within ``exact_scan_max_rows`` is scanned exactly, one with its
        own index searches that index alone, and a short answer is re-asked exactly. The exact
        pass is its own statement text, not a planner switch: psycopg prepares a statement after five
        runs and PostgreSQL may then keep one generic plan for it, which no later ``SET LOCAL``
        re-plans (docs/decisions.md).
        """
        params = {"q": Vector(list(embedding)), "tenant": tenant_id, "k": k}
        dialect = self.db.dialect
        post_filters = dialect.ann_post_filters()
        size, own_index = self.tenant_shape(tenant_id, scope_cache_s)
        if post_filters and own_index is None and size <= exact_scan_max_rows:
            # a small tenant: one exact pass beats an ANN pass that may come up short
            return rows_of(VectorHit, self.db.tenant_read(tenant_id, (_vector_sql(exact=True), params)))
        # the tenant's own index when it has one; else (a tenant whose index is still to be built)
        # the shared one, filtered after its scan
        ann = _vector_sql(exact=False, own_index_of=dialect.tenant_literal(tenant_id) if own_index else None)
        settings = [(dialect.search_breadth_sql(max(ef_search, k)), None)]
        if own_index is None and (iterative := dialect.filtered_scan_sql()):
            settings.append((iterative, None))  # the shared index keeps scanning until k are the tenant's
        rows = self.db.tenant_read(tenant_id, *settings, (ann, params))
        if len(rows) < k and post_filters:
            rows = self.db.tenant_read(tenant_id, (_vector_sql(exact=True), params))
        return rows_of(VectorHit, rows)

    def searchable_rows(self, tenant_id: str, *, at_most: int) -> int:
        """The tenant's searchable vectors, counted up to ``at_most`` (asked only after a short answer)."""
        rows = self.db.tenant_read(
            tenant_id,
            (
                """SELECT count(*) AS n FROM (SELECT 1 FROM memory_vectors v
                                              WHERE v.tenant_id = %s AND v.searchable LIMIT %s) held""",
                [tenant_id, at_most],
            ),
        )
        return int(rows[0]["n"])

    def hot_scope_size(self, tenant_id: str, cache_s: float) -> int:
        """The tenant's hot memories (see `tenant_shape`)."""
        return self.tenant_shape(tenant_id, cache_s)[0]

    def searchable_size(self, tenant_id: str, cache_s: float, *, at_most: int = 20_000) -> int:
        """The memories a query's candidates come from: the hot ones (the tenant's counter) and the
        cold stubs (their vectors, counted up to ``at_most`` by the partial index), as read at most
        ``cache_s`` ago by this process."""
        cached = self._searchable.get(tenant_id)
        now = time.monotonic()
        if cached is not None and now - cached[1] < cache_s:
            return cached[0]
        rows = self.db.tenant_read(
            tenant_id,
            (
                """SELECT count(*) AS n FROM (SELECT 1 FROM memory_vectors v
                                              WHERE v.tenant_id = %s AND v.cold LIMIT %s) held""",
                [tenant_id, at_most],
            ),
        )
        size = self.hot_scope_size(tenant_id, cache_s) + int(rows[0]["n"])
        self._searchable[tenant_id] = (size, now)
        return size

    def tenant_shape(self, tenant_id: str, cache_s: float) -> tuple[int, str | None]:
        """The tenant's hot memories and its own ANN index (None: none yet), as read at most
        ``cache_s`` ago by this process: they only pick the exact pass, the tenant's index or the
        shared one, and a count a few seconds old picks as well as a fresh one. An index dropped in
        the meantime costs correctness nothing: its statement then plans an exact scan."""
        cached = self._scope_sizes.get(tenant_id)
        now = time.monotonic()
        if cached is not None and now - cached[2] < cache_s:
            return cached[0], cached[1]
        rows = self.db.tenant_read(
            tenant_id, ("SELECT hot_memories, vector_index FROM tenants WHERE tenant_id = %s", [tenant_id])
        )
        size = int(rows[0]["hot_memories"]) if rows else 0
        own = rows[0]["vector_index"] if rows else None
        self._scope_sizes[tenant_id] = (size, own, now)
        return size, own

    def text_search(self, tenant_id: str, phrases: Sequence[Sequence[str]], *, k: int, cap: int) -> list[PhraseHit]:
        """Every key phrase (each followed by its synonyms) over labels and definitions, in one call:
        rows ``(phrase_no, id, rank, label_match)``, the phrase verbatim first, so an exact rare term
        always surfaces (S6.2). PostgreSQL runs it through ``contextos_text_search_phrases``
        (migration 0015), where the GIN index is usable under row-level security."""
        if self.db.dialect.ranks_in_sql():
            return rows_of(PhraseHit, self.db.tenant_read(tenant_id, phrases_call(phrases, k=k, cap=cap)))
        with self.db.tenant_tx(tenant_id) as conn:
            return rows_of(PhraseHit, search_phrases(conn, self.db.dialect, tenant_id, phrases, k=k, cap=cap))

    def text_rank(
        self,
        tenant_id: str,
        query: str,
        extra: Sequence[str],
        phrases: Sequence[Sequence[str]],
        *,
        k: int,
        cap: int | None,
        params: BM25Params,
        with_cold: bool = False,
    ) -> list[TextHit]:
        """S6.2's text search as BM25 over the tenant's statistics
        (store/definitions/contextos_bm25_rank.sql): the whole query plus ``extra`` terms (synonyms,
        carried phrases) at a lower weight; rows ``(id, score, matched, cold)``, hot memories first,
        then cold stubs when ``with_cold``."""
        if self.db.dialect.ranks_in_sql():
            call = bm25_call(query, extra, k=k, cap=cap, params=params, with_cold=with_cold)
            return rows_of(TextHit, self.db.tenant_read(tenant_id, call))
        with self.db.tenant_tx(tenant_id) as conn:
            dialect = self.db.dialect
            ranked = rank_text(conn, dialect, tenant_id, query, extra, phrases, k=k, cap=cap or k, params=params)
            return rows_of(TextHit, ranked)

    def same_subject_pairs(self, tenant_id: str, ids: Sequence[UUID], *, min_cosine: float) -> list[SubjectPair]:
        """Pairs ``(a, b)`` of the given memories (hot or cold) whose embeddings are at least
        ``min_cosine`` apart: the candidates about the same subject, for the relevance recipe's
        fresher-first rule. Computed in the database (returning vectors as text costs ~1.5 ms each
        to parse)."""
        if len(ids) < 2:
            return []
        pairs = self.db.tenant_read(
            tenant_id,
            (
                """SELECT a.memory_id AS a, b.memory_id AS b
                   FROM memory_vectors a
                   JOIN memory_vectors b ON b.tenant_id = a.tenant_id AND b.memory_id = ANY(%(ids)s::uuid[])
                        AND a.memory_id < b.memory_id
                   WHERE a.tenant_id = %(tenant)s AND a.memory_id = ANY(%(ids)s::uuid[])
                     AND (a.embedding <=> b.embedding) <= %(distance)s""",
                {"tenant": tenant_id, "ids": list(ids), "distance": 1.0 - min_cosine},
            ),
        )
        return rows_of(SubjectPair, pairs)

    def graph_expand(
        self, tenant_id: str, seeds: Sequence[UUID], *, hops: int, fall: float, shared_source_weight: float, k: int
    ) -> list[WalkRow]:
        """Memories reachable from the seeds within ``hops`` edges (either direction), weight falling
        per hop; superseded memories lead forward to their successor; memories that share a source
        document or session with a seed count as one-hop links (implicit edges). The walk on its
        own: the read path runs the same SQL inside `candidate_pool`."""
        if not seeds:
            return []
        with self.db.tenant_tx(tenant_id) as conn:
            walked = conn.execute(
                graph_walk_sql(live_now, as_of=False, hops=hops),
                walk_params(tenant_id, seeds, fall, shared_source_weight, k),
            ).fetchall()
        return rows_of(WalkRow, walked)

    def candidate_pool(self, tenant_id: str, query_vector: Sequence[float], request: PoolRequest) -> list[PoolRow]:
        """One statement after the searches: the graph walk from the seeds merged with the searches'
        hits, each candidate with its scoring row, exact cosine, walk weight (0 when not reached),
        sources, source excerpts (the L2 tier) and whether it shares an S9 community with a top
        hit; then the pinned ``always_load`` memories, flagged (see `candidate_pool_sql`)."""
        return self.db.tenant_read(
            tenant_id,
            (
                candidate_pool_sql(live_now, as_of=False, hops=request.hops),
                pool_params(request, tenant_id, query_vector),
            ),
        )

    def reinforce_and_log(
        self,
        tenant_id: str,
        memory_ids: Sequence[UUID],
        *,
        intent: str,
        budget: int,
        tokens_used: int,
        session_id: str | None = None,
    ) -> None:
        """S5 reinforcement of exactly the injected memories and the context_log row: one statement each."""
        d = self.decay
        strength = reinforced(current_strength("m"), d)
        scale = weibull_scale("m.access_count + 1", d)
        with self.db.tenant_tx(tenant_id) as conn:
            if memory_ids:
                conn.execute(
                    f"""UPDATE memories AS m SET
                            strength_anchor = {strength},
                            strength = {strength},
                            band = {band_case(strength, d)},
                            next_transition_at = {
                        next_transition(strength, "now()", "m.decay_rate", strength, d, scale_sql=scale)
                    },
                            decay_scale = {scale},
                            strength_anchor_at = now(),
                            strength_materialized_at = now(),
                            last_accessed_at = now(),
                            access_count = m.access_count + 1
                        WHERE m.tenant_id = %s AND m.id = ANY(%s)""",
                    [tenant_id, list(memory_ids)],
                )
            conn.execute(
                """INSERT INTO context_log (tenant_id, session_id, intent, budget, tokens_used, memory_ids)
                   VALUES (%s, %s, %s, %s, %s, %s)""",
                [tenant_id, session_id, intent, budget, tokens_used, list(memory_ids)],
            )

    def get_memory(self, tenant_id: str, memory_id: UUID) -> MemoryDetail:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                f"""SELECT m.id, m.norm_key, m.label, m.definition, m.type, m.importance, m.strength_anchor,
                           m.strength_anchor_at, m.strength, m.band, m.access_count, m.last_accessed_at,
                           m.tier, m.state, m.provenance, m.base_trust, v.embedder_id, m.decay_rate,
                           m.next_transition_at, m.created_at, m.updated_at, {current_strength("m")} AS strength_now,
                           m.valid_from, m.valid_to, m.recorded_at, m.superseded_at, m.superseded_by,
                           m.always_load, m.protected, m.user_id, m.agent_id, m.run_id, m.tags, m.metadata, m.version
                    FROM memories m
                    LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
                    WHERE m.tenant_id = %s AND m.id = %s""",
                [tenant_id, memory_id],
            ).fetchone()
        if not row:
            raise NotFound(f"memory {memory_id} not found")
        return cast(MemoryDetail, row)
