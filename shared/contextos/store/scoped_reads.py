"""The read path's three queries restricted to a scope inside the tenant (S11: user, agent, run,
tags, metadata). Same shapes as the store's present reads, so retrieval swaps one for the other,
as it does for history.

Precision first: every candidate passes the scope predicate in the candidate pool (the one
statement all results come through), whatever the searches returned. Recall second:

- vector: a small scope (at most ``SCOPED_EXACT_MAX_ROWS`` rows) is scanned exactly — on
  PostgreSQL its vectors found through the scope copy on memory_vectors (migration 0023), elsewhere
  through the scope's index on memories; the ANN index kept out by ordering on an expression it
  does not serve. A large one asks the ANN index for a breadth widened by how much of the tenant
  the scope is, filters the rows it returns, and falls back to the exact scan when that comes up
  short (pgvector 0.6 filters after the index scan: docs/design.md Appendix A);
- text: the tenant's BM25 function with the scope applied while it gathers, in a statement planned
  for that scope (store/definitions/contextos_bm25_rank.sql): every match of a small scope scored, a
  large one gathered by levels within it; the tenant's statistics either way, so a scope's ranking
  is the tenant's ranking of its memories. A metadata filter (not known to the function) asks the
  tenant's ranking for more rows, then filters them to the scope.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from contextos.ports.reads import BM25Params, PoolRequest, TextRanking
from contextos.ports.rows import TextHit, rows_of
from contextos.scopes import ScopeFilter
from contextos.store.db import Database
from contextos.store.history import HistoricalReads, believed, candidate_pool_sql, live_now, pool_params
from contextos.store.scopes import scope_params, scope_predicate, vector_scope_predicate
from contextos.store.text_search import bm25_call
from pgvector import Vector

SCOPED_EXACT_MAX_ROWS = 4000  # up to here one exact pass through the scope's index beats a widened ANN
MAX_BREADTH = 1000  # hnsw.ef_search beyond this costs more than the exact scan of a mid-size scope


# A widened ANN expects this many times k of the scope's rows among its candidates. Fidelity sets
# it: at 100k, 2·k and 4·k left a half-tenant scope's vector recall at 0.71 and 0.75 against
# 0.92 for 25·k (the breadth every large scope had before it was sized by share).
SCOPE_CANDIDATES = 25
SHARE_FLOOR = 1e-3


def ann_breadth(ef_search: int, k: int, share: float) -> int:
    """The widened ANN's breadth for a scope that is ``share`` of the index's candidates near a
    query (pgvector 0.6 filters after the index scan): enough for `SCOPE_CANDIDATES` · k of its
    rows, never below the unscoped search's ``ef_search``, bounded by `MAX_BREADTH`."""
    return min(MAX_BREADTH, max(ef_search, k, math.ceil(SCOPE_CANDIDATES * k / max(share, SHARE_FLOOR))))


TEXT_WIDENING = 4  # a scoped text search asks the tenant-wide one for this many times k


# (tenant, scope) → (its share of the ANN's candidates near recent queries, found large at monotonic
# s) for scopes too large for the exact pass, so their next queries go straight to a widened ANN
# sized by that share; bounded, per process.
_LARGE_SCOPES: OrderedDict[tuple[str, str], tuple[float, float]] = OrderedDict()
_LARGE_SCOPES_MAX = 1024


def _remember(key: tuple[str, str], value: tuple[float, float]) -> None:
    _LARGE_SCOPES[key] = value
    _LARGE_SCOPES.move_to_end(key)
    while len(_LARGE_SCOPES) > _LARGE_SCOPES_MAX:
        _LARGE_SCOPES.popitem(last=False)


class PresentReads(TextRanking, Protocol):
    """The tenant-wide present-time reads a scope narrows (``contextos.store.reads.ReadStore``)."""

    db: Database

    def hot_scope_size(self, tenant_id: str, cache_s: float) -> int: ...

    def tenant_shape(self, tenant_id: str, cache_s: float) -> tuple[int, str | None]: ...


@dataclass
class ScopedReads:
    store: PresentReads
    scope: ScopeFilter
    exact_scan_max_rows: int = 20_000  # the retrieval settings' (what the text side's exact pass is bounded by)
    scope_cache_s: float = 30.0  # how long a scope found too large for the exact pass is remembered

    def enumerated(self, alias: str) -> str:
        """`live`, for a statement that finds the scope's rows from the filter alone."""
        return f"({live_now(alias)} AND {scope_predicate(alias, self.scope, self.store.db.dialect, enumerates=True)})"

    def live(self, alias: str) -> str:
        """ "In the hot, current store, and in scope" on a memories alias."""
        return f"({live_now(alias)} AND {scope_predicate(alias, self.scope, self.store.db.dialect)})"

    def _hints(self) -> list[tuple[str, None]]:
        """Every scope field has an index (btrees on user/agent/run, GIN on tags and metadata), yet
        with a LIMIT or a small join the planner may pick a sequential scan of the tenant's memories
        (measured: 71 ms for a tag scope of 2k rows of 20k, under 1 ms through the GIN index)."""
        sql = self.store.db.dialect.index_scans_only_sql()
        return [(sql, None)] if sql else []

    def _params(self, tenant_id: str) -> dict:
        return {"tenant": tenant_id} | scope_params(self.scope)

    @property
    def _by_vector_row(self) -> bool:
        """The scope's vectors are found on memory_vectors itself (migration 0023): an owner field
        (user, agent, run) has a btree there; tags and metadata alone are enumerated on memories."""
        scope = self.scope
        return self.store.db.dialect.vectors_carry_scope() and bool(scope.user_id or scope.agent_id or scope.run_id)

    def _exact_sql(self, *, capped: bool) -> str:
        """The scope's vectors, exactly: each distance once, the nearest k, and how many the scope
        holds (at most cap + 1 when ``capped``)."""
        limit = "LIMIT %(cap)s + 1" if capped else ""
        if self._by_vector_row:
            meta = ""
            if self.scope.metadata:  # not copied onto vectors: checked on the memories' rows
                meta = f""" AND EXISTS (SELECT 1 FROM memories m WHERE m.tenant_id = v.tenant_id AND m.id = v.memory_id
                                         AND {scope_predicate("m", self.scope, self.store.db.dialect)})"""
            in_scope = vector_scope_predicate("v", self.scope)
            scoped = f"""SELECT v.memory_id, v.embedding <=> %(q)s AS distance FROM memory_vectors v
                         WHERE v.tenant_id = %(tenant)s AND v.searchable AND {in_scope}{meta}
                         {limit}"""
        else:
            scoped = f"""SELECT v.memory_id, v.embedding <=> %(q)s AS distance
                         FROM (SELECT m.id FROM memories m WHERE m.tenant_id = %(tenant)s AND {self.enumerated("m")}
                               {limit}) ids
                         JOIN memory_vectors v ON v.tenant_id = %(tenant)s AND v.memory_id = ids.id AND v.searchable"""
        if capped and self._by_vector_row:
            # An owner's hot memories counted first, up to cap + 1, through its btree on memories
            # (an index-only count): a large owner's vectors are then not read at all.
            owner = " AND ".join(
                f"m.{field} = %(scope_{field})s"
                for field in ("user_id", "agent_id", "run_id")
                if getattr(self.scope, field)
            )
            small = "WHERE (SELECT n FROM size) <= %(cap)s"
            return f"""WITH size AS MATERIALIZED (
                           SELECT count(*) AS n FROM (SELECT 1 FROM memories m
                                                      WHERE m.tenant_id = %(tenant)s AND {live_now("m")} AND {owner}
                                                      LIMIT %(cap)s + 1) owned),
                       scoped AS MATERIALIZED ({scoped.replace("WHERE v.tenant_id", small + " AND v.tenant_id", 1)})
                       SELECT near.id, near.vector_sim,
                              greatest((SELECT n FROM size), (SELECT count(*) FROM scoped)) AS scope_rows
                       FROM size LEFT JOIN LATERAL (
                           SELECT memory_id AS id, 1.0 - distance AS vector_sim FROM scoped
                           ORDER BY distance + 0.0, memory_id LIMIT %(k)s) near ON true"""
        # the sort key is not the ANN index's expression, so the index stays out of the exact pass
        return f"""WITH scoped AS MATERIALIZED ({scoped})
                   SELECT memory_id AS id, 1.0 - distance AS vector_sim, (SELECT count(*) FROM scoped) AS scope_rows
                   FROM scoped ORDER BY distance + 0.0, memory_id LIMIT %(k)s"""

    def _is_large(self, tenant_id: str, scope_cache_s: float) -> tuple[float, float] | None:
        known = _LARGE_SCOPES.get((tenant_id, self.scope.model_dump_json()))
        if known is None or time.monotonic() - known[1] > max(scope_cache_s, 1.0):
            return None
        return known

    def vector_search(
        self,
        tenant_id: str,
        embedding: Sequence[float],
        *,
        k: int,
        ef_search: int,
        exact_scan_max_rows: int = 20_000,
        scope_cache_s: float = 0.0,
    ) -> list[dict]:
        db = self.store.db
        cap = min(exact_scan_max_rows, SCOPED_EXACT_MAX_ROWS)
        params = self._params(tenant_id) | {"q": Vector(list(embedding)), "k": k, "cap": cap}
        key = (tenant_id, self.scope.model_dump_json())
        known = self._is_large(tenant_id, scope_cache_s)
        seen = _LARGE_SCOPES.get(key)
        # a scope whose share of the index's candidates puts it well above the exact pass's bound
        # stays large without being counted again (the ANN still falls back when short)
        if (
            known is None
            and seen is not None
            and seen[0] * self.store.hot_scope_size(tenant_id, scope_cache_s) > 2 * cap
        ):
            known = (seen[0], time.monotonic())
        if known is None:
            # One round trip for a small scope: its vectors (at most cap + 1), their exact distances,
            # and how many there were; more than cap means the scope is large.
            rows = db.tenant_read(tenant_id, *self._hints(), (self._exact_sql(capped=True), params))
            if not rows or int(rows[0]["scope_rows"]) <= cap or not db.dialect.ranks_in_sql():
                _LARGE_SCOPES.pop(key, None)  # small (again): exact
                return [{"id": r["id"], "vector_sim": r["vector_sim"]} for r in rows if r["id"] is not None]
            # still large: the share last seen, else at least cap + 1 of the tenant's hot rows
            hot = max(self.store.hot_scope_size(tenant_id, scope_cache_s), cap + 1)
            known = (seen[0] if seen else (cap + 1) / hot, time.monotonic())
        share = known[0]
        breadth = ann_breadth(ef_search, k, share)
        ann = self._ann_sql(tenant_id, scope_cache_s)
        found = db.tenant_read(
            tenant_id, (db.dialect.search_breadth_sql(breadth), None), (ann, params | {"breadth": breadth})
        )
        if found:  # the scope's share among the index's candidates near this query sizes the next one
            near = int(found[0]["in_scope"]) / max(int(found[0]["candidates"]), 1)
            share = max((share + near) / 2, SHARE_FLOOR)
        _remember(key, (share, known[1]))
        if len(found) < k:  # the widened ANN came up short: the whole scope, exactly
            rows = db.tenant_read(tenant_id, *self._hints(), (self._exact_sql(capped=False), params))
            return [{"id": r["id"], "vector_sim": r["vector_sim"]} for r in rows]
        return [{"id": r["id"], "vector_sim": r["vector_sim"]} for r in found]

    def _ann_sql(self, tenant_id: str, scope_cache_s: float) -> str:
        """The widened ANN over the tenant's index, counting every candidate it returned and those in
        scope apart, then the scope's nearest k."""
        db = self.store.db
        # every candidate the index returned is counted, those in scope apart: a LEFT JOIN where
        # the scope (or its metadata) is read on memories
        memories = f"LEFT JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = near.memory_id AND {self.live('m')}"
        if db.dialect.vectors_carry_scope():  # the ANN's rows carry the scope: filtered as they come
            wanted = vector_scope_predicate("near", self.scope)
            join = memories if self.scope.metadata else ""
            wanted = f"({wanted} AND m.id IS NOT NULL)" if self.scope.metadata else wanted
        else:
            wanted, join = "(m.id IS NOT NULL)", memories
        # the tenant's own index (store/vector_indexes.py) holds only its rows, so the scope's share of
        # its candidates is its share of the tenant; the tenant spelt out lets every plan match it
        own_index = self.store.tenant_shape(tenant_id, scope_cache_s)[1]
        indexed_tenant = db.dialect.tenant_literal(tenant_id) if own_index else "%(tenant)s"
        return f"""SELECT id, vector_sim, candidates, in_scope FROM (
                      SELECT near.memory_id AS id, 1.0 - near.distance AS vector_sim, near.distance,
                             {wanted} AS wanted, count(*) OVER () AS candidates,
                             sum(CASE WHEN {wanted} THEN 1 ELSE 0 END) OVER () AS in_scope
                      FROM (
                          SELECT * FROM (
                              SELECT v.memory_id, v.embedding <=> %(q)s AS distance, v.user_id, v.agent_id, v.run_id,
                                     v.tags
                              FROM memory_vectors v
                              WHERE v.tenant_id = {indexed_tenant} AND v.searchable AND v.indexed
                              ORDER BY v.embedding <=> %(q)s LIMIT %(breadth)s) ann
                          UNION ALL
                          (SELECT v.memory_id, v.embedding <=> %(q)s, v.user_id, v.agent_id, v.run_id, v.tags
                           FROM memory_vectors v
                           WHERE v.tenant_id = %(tenant)s AND v.searchable AND NOT v.indexed
                           ORDER BY (v.embedding <=> %(q)s) + 0.0 LIMIT %(breadth)s)
                      ) near
                      {join}
                  ) hits
                  WHERE wanted
                  ORDER BY distance, id
                  LIMIT %(k)s"""

    def searchable_rows(self, tenant_id: str, *, at_most: int) -> int:
        """The scope's searchable vectors, counted up to ``at_most``."""
        rows = self.store.db.tenant_read(
            tenant_id,
            (
                f"""SELECT count(*) AS n FROM (
                        SELECT 1 FROM memories m
                        JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id AND v.searchable
                        WHERE m.tenant_id = %(tenant)s AND {self.live("m")} LIMIT %(n)s) held""",
                self._params(tenant_id) | {"n": at_most},
            ),
        )
        return int(rows[0]["n"])

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
        """BM25 within the scope: the tenant's ranking of the scope's own matches (every match of a
        small scope; a large one gathered by levels within it). A metadata filter: the tenant's
        ranking widened, keeping its own rows of it in rank order."""
        db = self.store.db
        if db.dialect.ranks_in_sql() and not self.scope.metadata:
            # the tenant's ranking of the scope's own matches, gathered within it (exact for a
            # small scope: store/definitions/contextos_bm25_rank.sql)
            call = bm25_call(query, extra, k=k, cap=cap, params=params, with_cold=with_cold, scope=self.scope)
            return rows_of(TextHit, db.tenant_read(tenant_id, call))
        hits = self.store.text_rank(
            tenant_id, query, extra, phrases, k=k * TEXT_WIDENING, cap=cap, params=params, with_cold=with_cold
        )
        if not hits:
            return []
        dialect = db.dialect
        rows = db.tenant_read(
            tenant_id,
            *self._hints(),
            (
                f"""SELECT m.id FROM memories m
                    WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(ids)s)
                      AND {scope_predicate("m", self.scope, dialect)}""",
                self._params(tenant_id) | {"ids": sorted({h["id"] for h in hits})},
            ),
        )
        keep = {r["id"] for r in rows}
        hot = [h for h in hits if h["id"] in keep and not h.get("cold")][:k]
        cold = [h for h in hits if h["id"] in keep and h.get("cold")][:k]
        return hot + cold

    def candidate_pool(self, tenant_id: str, query_vector: Sequence[float], request: PoolRequest) -> list[dict]:
        return self.store.db.tenant_read(
            tenant_id,
            (
                candidate_pool_sql(self.live, as_of=False, hops=request.hops),
                pool_params(request, tenant_id, query_vector) | scope_params(self.scope),
            ),
        )


@dataclass
class ScopedHistoricalReads:
    """A scope and ``as_of`` together (S7 with S11): what was believed then, among the memories in
    the scope now (scopes are organisation and carry no history of their own). The historical reads
    already scan the tenant's vectors exactly, so the scope costs them nothing more; its text is
    ranked by the tenant's statistics over the scope's own matches believed then (a metadata
    filter: the tenant's historical ranking widened and filtered)."""

    history: HistoricalReads
    scope: ScopeFilter
    exact_scan_max_rows: int = 20_000

    def live(self, alias: str) -> str:
        """Believed at %(as_of)s and in scope, on a memories alias."""
        dialect = self.history.db.dialect
        return f"({believed(alias)} AND {scope_predicate(alias, self.scope, dialect)})"

    def _params(self, tenant_id: str) -> dict:
        return {"tenant": tenant_id, "as_of": self.history.as_of} | scope_params(self.scope)

    def vector_search(
        self,
        tenant_id: str,
        embedding: Sequence[float],
        *,
        k: int,
        ef_search: int = 0,
        exact_scan_max_rows: int = 0,
        scope_cache_s: float = 0.0,
    ) -> list[dict]:
        return self.history.db.tenant_read(
            tenant_id,
            (
                f"""SELECT m.id, 1.0 - (v.embedding <=> %(q)s) AS vector_sim
                    FROM memory_vectors v
                    JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                    WHERE v.tenant_id = %(tenant)s AND {self.live("m")}
                    ORDER BY (v.embedding <=> %(q)s) + 0.0, m.id
                    LIMIT %(k)s""",
                self._params(tenant_id) | {"q": Vector(list(embedding)), "k": k},
            ),
        )

    def searchable_rows(self, tenant_id: str, *, at_most: int) -> int:
        """The vectors of the scope's memories believed then, counted up to ``at_most``."""
        rows = self.history.db.tenant_read(
            tenant_id,
            (
                f"""SELECT count(*) AS n FROM (
                        SELECT 1 FROM memory_vectors v
                        JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                        WHERE v.tenant_id = %(tenant)s AND {self.live("m")} LIMIT %(n)s) held""",
                self._params(tenant_id) | {"n": at_most},
            ),
        )
        return int(rows[0]["n"])

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
        db = self.history.db
        if db.dialect.ranks_in_sql() and not self.scope.metadata:  # gathered within the scope, as of then
            call = bm25_call(query, extra, k=k, cap=cap, params=params, as_of=self.history.as_of, scope=self.scope)
            return rows_of(TextHit, db.tenant_read(tenant_id, call))
        hits = self.history.text_rank(tenant_id, query, extra, phrases, k=k * TEXT_WIDENING, cap=cap, params=params)
        if not hits:
            return []
        rows = db.tenant_read(
            tenant_id,
            (
                f"""SELECT m.id FROM memories m
                    WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(ids)s) AND {self.live("m")}""",
                self._params(tenant_id) | {"ids": sorted({h["id"] for h in hits})},
            ),
        )
        keep = {r["id"] for r in rows}
        return rows_of(TextHit, [h for h in hits if h["id"] in keep][:k])

    def candidate_pool(self, tenant_id: str, query_vector: Sequence[float], request: PoolRequest) -> list[dict]:
        return self.history.db.tenant_read(
            tenant_id,
            (
                candidate_pool_sql(self.live, as_of=True, hops=request.hops),
                pool_params(request, tenant_id, query_vector) | self._params(tenant_id),
            ),
        )
