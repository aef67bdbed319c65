"""The read path's three queries restricted to a scope inside the tenant (S11: user, agent, run,
tags, metadata). Same shapes as the store's present reads, so retrieval swaps one for the other,
as it does for history.

Precision first: every candidate passes the scope predicate in the candidate pool (the one
statement all results come through), whatever the searches returned. Recall second:

- vector: a small scope (at most ``exact_scan_max_rows`` rows, counted through the scope's own
  index) is scanned exactly — its rows found through that index, their distances sorted, the ANN
  index kept out by ordering on an expression it does not serve; a large one asks the ANN index
  for a breadth widened by how much of the tenant the scope is, filters, and falls back to the
  exact scan when that comes up short (pgvector 0.6 filters after the index scan: FIELD-NOTES);
- text: the tenant-wide phrase search asked for more rows, then filtered to the scope.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from contextos.scopes import ScopeFilter
from contextos.store.history import PoolRequest, candidate_pool_sql, live_now
from contextos.store.repository import MemoryStore
from contextos.store.scopes import scope_params, scope_predicate
from contextos.store.text_search import BM25Params
from pgvector import Vector

SCOPED_EXACT_MAX_ROWS = 4000  # up to here one exact pass through the scope's index beats a widened ANN
MAX_BREADTH = 1000  # hnsw.ef_search beyond this costs more than the exact scan of a mid-size scope
TEXT_WIDENING = 4  # a scoped text search asks the tenant-wide one for this many times k


# (tenant, scope) → (rows at least, read at monotonic s) for scopes too large for the exact pass, so
# their next queries go straight to the widened ANN; bounded, per process.
_LARGE_SCOPES: OrderedDict[tuple[str, str], tuple[int, float]] = OrderedDict()
_LARGE_SCOPES_MAX = 1024


def _remember(key: tuple[str, str], value: tuple[int, float]) -> None:
    _LARGE_SCOPES[key] = value
    _LARGE_SCOPES.move_to_end(key)
    while len(_LARGE_SCOPES) > _LARGE_SCOPES_MAX:
        _LARGE_SCOPES.popitem(last=False)


@dataclass
class ScopedReads:
    store: MemoryStore
    scope: ScopeFilter

    def enumerated(self, alias: str) -> str:
        """`live`, for a statement that finds the scope's rows from the filter alone."""
        return (
            f"({live_now(alias)} AND {scope_predicate(alias, self.scope, self.store.db.dialect.name, enumerates=True)})"
        )

    def live(self, alias: str) -> str:
        """ "In the hot, current store, and in scope" on a memories alias."""
        return f"({live_now(alias)} AND {scope_predicate(alias, self.scope, self.store.db.dialect.name)})"

    def _hints(self) -> list[tuple[str, None]]:
        """Every scope field has an index (btrees on user/agent/run, GIN on tags and metadata), yet
        with a LIMIT or a small join the planner may pick a sequential scan of the tenant's memories
        (measured: 71 ms for a tag scope of 2k rows of 20k, under 1 ms through the GIN index)."""
        sql = self.store.db.dialect.index_scans_only_sql()
        return [(sql, None)] if sql else []

    def _params(self, tenant_id: str) -> dict:
        return {"tenant": tenant_id} | scope_params(self.scope)

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
        # One round trip for a small scope: its ids (at most cap + 1, through the scope's index), their
        # exact distances, and how many there were; more than cap means the scope is large.
        exact = f"""WITH scoped AS MATERIALIZED (
                        SELECT m.id FROM memories m WHERE m.tenant_id = %(tenant)s AND {self.enumerated("m")}
                        LIMIT %(cap)s + 1)
                    SELECT v.memory_id AS id, 1.0 - (v.embedding <=> %(q)s) AS vector_sim,
                           (SELECT count(*) FROM scoped) AS scope_rows
                    FROM scoped
                    JOIN memory_vectors v ON v.tenant_id = %(tenant)s AND v.memory_id = scoped.id AND v.searchable
                    ORDER BY (v.embedding <=> %(q)s) + 0.0, v.memory_id
                    LIMIT %(k)s"""
        key = (tenant_id, self.scope.model_dump_json())
        known = _LARGE_SCOPES.get(key)
        if known is None or time.monotonic() - known[1] > max(scope_cache_s, 1.0):
            rows = db.tenant_read(tenant_id, *self._hints(), (exact, params))
            if not rows or int(rows[0]["scope_rows"]) <= cap or db.dialect.name != "postgres":
                _LARGE_SCOPES.pop(key, None)
                return [{"id": r["id"], "vector_sim": r["vector_sim"]} for r in rows]
            known = (int(rows[0]["scope_rows"]), time.monotonic())
            _remember(key, known)
        size = known[0]
        hot = max(self.store._scope_size(tenant_id, scope_cache_s), size)
        breadth = min(MAX_BREADTH, max(ef_search, k) * max(1, round(2 * hot / size)))
        ann = f"""SELECT id, vector_sim FROM (
                      SELECT near.memory_id AS id, 1.0 - near.distance AS vector_sim, near.distance
                      FROM (
                          (SELECT v.memory_id, v.embedding <=> %(q)s AS distance FROM memory_vectors v
                           WHERE v.tenant_id = %(tenant)s AND v.searchable AND v.indexed
                           ORDER BY v.embedding <=> %(q)s LIMIT %(breadth)s)
                          UNION ALL
                          (SELECT v.memory_id, v.embedding <=> %(q)s FROM memory_vectors v
                           WHERE v.tenant_id = %(tenant)s AND v.searchable AND NOT v.indexed
                           ORDER BY (v.embedding <=> %(q)s) + 0.0 LIMIT %(breadth)s)
                      ) near
                      JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = near.memory_id
                      WHERE {self.live("m")}
                  ) hits
                  ORDER BY distance, id
                  LIMIT %(k)s"""
        found = db.tenant_read(
            tenant_id, (db.dialect.search_breadth_sql(breadth), None), (ann, params | {"breadth": breadth})
        )
        if len(found) < k:  # the widened ANN came up short: the whole scope, exactly
            whole = exact.replace("LIMIT %(cap)s + 1", "")
            rows = db.tenant_read(tenant_id, *self._hints(), (whole, params))
            found = [{"id": r["id"], "vector_sim": r["vector_sim"]} for r in rows]
        return found

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
    ) -> list[dict]:
        """The tenant's BM25 ranking, widened, then the scope's own rows of it in rank order."""
        hits = self.store.text_rank(
            tenant_id, query, extra, phrases, k=k * TEXT_WIDENING, cap=cap, params=params, with_cold=with_cold
        )
        if not hits:
            return []
        dialect = self.store.db.dialect.name
        rows = self.store.db.tenant_read(
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
                request.params(tenant_id, query_vector) | scope_params(self.scope),
            ),
        )
