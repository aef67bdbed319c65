"""Reads as of a past time (S7 bi-temporal history): what we believed then.

A memory was believed at T when it had been recorded by T and had not yet been superseded at T
(``superseded_at`` is the transaction time of its supersession; migration 0011). These reads have
the same shape as the store's current reads, so retrieval swaps one for the other. They scan the
tenant's vectors exactly: superseded vectors are outside the ANN index (only current ones are
searchable), and historical questions are rare enough to pay a few tens of milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from contextos.ports.reads import BM25Params, PoolRequest
from contextos.store.db import Database
from contextos.store.predicates import believed
from contextos.store.predicates import live_now as live_now  # re-exported: readers import it from here
from contextos.store.sql import current_strength
from contextos.store.text_search import rank_text, search_phrases
from pgvector import Vector


def corroborations(alias: str, as_of: str | None = None) -> str:
    """How many ``corroborates`` edges touch a memory (composite trust, S7)."""
    when = f" AND r.created_at <= {as_of}" if as_of else ""
    return (
        f"(SELECT count(*) FROM relationships r WHERE r.tenant_id = {alias}.tenant_id AND r.type = 'corroborates'"
        f" AND (r.src_id = {alias}.id OR r.dst_id = {alias}.id){when})"
    )


ROW_COLUMNS = (
    "m.id, m.label, m.definition, m.type, m.importance, m.access_count, m.always_load, m.last_accessed_at,"
    " m.provenance, m.base_trust, m.updated_by, m.valid_from, m.norm_key"
)


def _reach_ctes(as_of: bool, hops: int) -> str:
    """The walk's CTEs, ending in ``reached(id, weight)``: every memory within ``hops`` edges of a
    seed (either direction, weight multiplied by the edge's weight and %(fall)s per hop, no walk back
    to its own seed) or sharing a source document or session with one (implicit edges), at its best
    weight. ``as_of`` also drops the edges and occurrences recorded after %(as_of)s.

    Each hop walks on only from the %(k)s heaviest memories of the hop before: a memory reached
    through any other is lighter than all of those (weights never grow along a walk), so it could
    not make the top %(k)s anyway — and the walk's cost stays flat however connected the graph is.
    """
    edge_then = " AND r.created_at <= %(as_of)s" if as_of else ""
    item_then = " AND other.created_at <= %(as_of)s" if as_of else ""
    ctes = ["front0(origin, id, weight) AS (SELECT s, s, 1.0::float8 FROM unnest(%(seeds)b::uuid[]) AS s)"]
    for n in range(1, max(hops, 0) + 1):
        ctes.append(
            f"""hop{n}(origin, id, weight) AS (
                   SELECT w.origin, step.next_id, w.weight * step.weight * %(fall)s
                   FROM front{n - 1} w
                   CROSS JOIN LATERAL (
                       SELECT r.dst_id AS next_id, r.weight FROM relationships r
                       WHERE r.tenant_id = %(tenant)s AND r.src_id = w.id AND r.type <> 'contradicts'{edge_then}
                       UNION ALL
                       SELECT r.src_id, r.weight FROM relationships r
                       WHERE r.tenant_id = %(tenant)s AND r.dst_id = w.id AND r.type <> 'contradicts'{edge_then}
                   ) step
                   WHERE step.next_id <> w.origin  -- no round trips home
               )"""
        )
        if n < hops:  # the heaviest distinct memories of this hop lead the next one
            ctes.append(
                f"""front{n} AS (
                       SELECT origin, id, weight FROM (
                           SELECT DISTINCT ON (id) origin, id, weight FROM hop{n} ORDER BY id, weight DESC
                       ) best
                       ORDER BY weight DESC, id
                       LIMIT %(k)s
                   )"""
            )
    steps = [f"SELECT id, weight FROM hop{n}" for n in range(1, max(hops, 0) + 1)] + ["SELECT id, weight FROM implicit"]
    ctes.append(
        f"""implicit AS (
                   SELECT other.memory_id AS id, %(shared)s::float8 AS weight
                   FROM memory_items seed
                   JOIN memory_items other
                     ON other.tenant_id = seed.tenant_id AND other.memory_id <> seed.memory_id
                    AND (other.document_id = seed.document_id OR other.session_id = seed.session_id)
                   WHERE seed.tenant_id = %(tenant)s AND seed.memory_id = ANY(%(seeds)b::uuid[]){item_then}
               )"""
    )
    ctes.append(
        f"""reached AS (
                   SELECT id, max(weight) AS weight FROM ({" UNION ALL ".join(steps)}) steps
                   GROUP BY id
               )"""
    )
    return ",\n               ".join(ctes)


def _graph_cte(live: Callable[[str], str]) -> str:
    """``graph(id, weight)``: the %(k)s heaviest memories reached that a read may see, a superseded
    one standing for its successor. Only the 4k heaviest reached are looked up, not all of them:
    fewer than k of those are visible only when most of the nearest neighbours were superseded
    without a visible successor (archiving removes a memory's edges from the hot graph)."""
    return f"""graph AS (
                   SELECT id, max(weight) AS weight FROM (
                       SELECT seen.id, heaviest.weight
                       FROM (SELECT id, weight FROM reached ORDER BY weight DESC, id LIMIT 4 * %(k)s) heaviest
                       CROSS JOIN LATERAL (
                           SELECT COALESCE(successor.id, m.id) AS id
                           FROM memories m
                           LEFT JOIN memories successor
                             ON successor.tenant_id = m.tenant_id AND successor.id = m.superseded_by
                            AND NOT {live("m")} AND {live("successor")}
                           WHERE m.tenant_id = %(tenant)s AND m.id = heaviest.id
                             AND ({live("m")} OR successor.id IS NOT NULL)
                       ) seen
                       ORDER BY heaviest.weight DESC, heaviest.id
                       LIMIT %(k)s
                   ) hits
                   GROUP BY id
               )"""


def graph_walk_sql(live: Callable[[str], str], *, as_of: bool, hops: int) -> str:
    """The walk of S6 on its own: ``(id, weight)``, heaviest first. ``live`` says which memories a
    read may see. The present and the historical read share this text."""
    return f"""WITH {_reach_ctes(as_of, hops)},
               {_graph_cte(live)}
               SELECT id, weight FROM graph ORDER BY weight DESC, id"""


def candidate_pool_sql(live: Callable[[str], str], *, as_of: bool, hops: int) -> str:
    """The read path's second step in one statement: the graph walk from %(seeds)s, merged with the
    vector and text hits (%(found)s), and for each candidate everything scoring and the budgets
    need — the scoring row, the walk's weight, its sources, and whether it shares an S9 community
    with one of %(top)s other than itself; then, flagged ``pinned``, up to %(pinned)s ``always_load``
    memories (S10), which are in every context whatever the query. ``vector_sim`` is NULL for the
    ids in %(known)s, whose cosine the caller already holds (the vector search's hits)."""
    return f"""WITH {_reach_ctes(as_of, hops)},
               {_graph_cte(live)},
               pool AS (
                   SELECT id, max(weight) AS graph_weight FROM (
                       SELECT id, weight FROM graph
                       UNION ALL
                       SELECT f, 0.0 FROM unnest(%(found)b::uuid[]) AS f
                   ) merged
                   GROUP BY id
               ),
               top_communities AS MATERIALIZED (  -- read once, not once per candidate
                   SELECT memory_id, community FROM memory_communities
                   WHERE tenant_id = %(tenant)s AND memory_id = ANY(%(top)b::uuid[])
               )
               SELECT {scoring_columns(as_of)}, pool.graph_weight,
                      EXISTS (
                          SELECT 1 FROM memory_communities c
                          JOIN top_communities t ON t.community = c.community AND t.memory_id <> c.memory_id
                          WHERE c.tenant_id = m.tenant_id AND c.memory_id = m.id
                      ) AS community,
                      false AS pinned
               FROM pool
               JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = pool.id
               {scoring_joins(as_of)}
               WHERE {live("m")}
               UNION ALL
               (SELECT {scoring_columns(as_of)}, 0.0, false, true
                FROM memories m
                {scoring_joins(as_of)}
                WHERE m.tenant_id = %(tenant)s AND m.always_load AND {live("m")}
                ORDER BY m.importance DESC, m.created_at
                LIMIT %(pinned)s)"""


def walk_params(tenant_id: str, seeds: Sequence[UUID], fall: float, shared_source_weight: float, k: int) -> dict:
    """`graph_walk_sql`'s parameters."""
    return {"tenant": tenant_id, "seeds": list(seeds), "fall": fall, "shared": shared_source_weight, "k": k}


def pool_params(request: PoolRequest, tenant_id: str, query_vector: Sequence[float]) -> dict:
    """`candidate_pool_sql`'s parameters."""
    return {
        "tenant": tenant_id,
        "q": Vector(list(query_vector)),
        "seeds": list(request.seeds),
        "found": list(request.found),
        "top": list(request.top),
        "fall": request.fall,
        "shared": request.shared_source_weight,
        "k": request.k,
        "pinned": request.pinned,
        "excerpts": request.excerpts,
        "excerpt_chars": request.excerpt_chars,
        "stems": list(request.stems),
        "known": list(request.known),
    }


def scoring_columns(as_of: bool) -> str:
    """What scoring, the budgets and the tiers read of a memory ``m`` joined `scoring_joins`: its
    row, strength now, corroborations (recorded by %(as_of)s when ``as_of``), exact cosine to
    %(q)s (NULL for the ids in %(known)s), sources and excerpts."""
    return f"""{ROW_COLUMNS}, {current_strength("m")} AS strength,
               {corroborations("m", "%(as_of)s" if as_of else None)} AS corroborations,
               CASE WHEN m.id = ANY(%(known)b::uuid[]) THEN NULL ELSE COALESCE(v.vector_sim, 0.0) END AS vector_sim,
               COALESCE(items.sources, '{{}}') AS sources,
               COALESCE(items.excerpts, '{{}}') AS excerpts,
               COALESCE(items.excerpt_stems, '{{}}') AS excerpt_stems"""


def scoring_joins(as_of: bool) -> str:
    """A memory ``m``'s cosine to %(q)s, ``v`` (not read for the ids in %(known)s), and, in one pass
    over its occurrences, ``items``: its distinct sources (documents, or ``session:<id>``) and what
    they said beyond its own definition (the L2 tier, S6.6: an occurrence's other definition, then
    its source excerpts), at most %(excerpts)s,
    each cut to %(excerpt_chars)s characters, with their stemmed forms (migration 0031; NULL where a
    row predates it). Those holding the most of the query's stems %(stems)s are read, then the
    newest occurrence's, in document order: a memory merged from many sources brings the passages
    that answer this query, not only its latest source's. The read path shows those that match."""
    when = " AND i.created_at <= %(as_of)s" if as_of else ""
    return f"""LEFT JOIN LATERAL (
                   SELECT 1.0 - (v.embedding <=> %(q)s) AS vector_sim FROM memory_vectors v
                   WHERE v.tenant_id = m.tenant_id AND v.memory_id = m.id AND NOT (m.id = ANY(%(known)b::uuid[]))
               ) v ON true
               LEFT JOIN LATERAL (
                   SELECT array_agg(DISTINCT o.source) AS sources,
                          array_agg(o.excerpt ORDER BY o.created_at DESC, o.ord)
                              FILTER (WHERE o.excerpt IS NOT NULL AND o.newest <= %(excerpts)s) AS excerpts,
                          array_agg(o.stems ORDER BY o.created_at DESC, o.ord)
                              FILTER (WHERE o.excerpt IS NOT NULL AND o.newest <= %(excerpts)s) AS excerpt_stems
                   FROM (
                       SELECT coalesce(i.document_id::text, 'session:' || i.session_id) AS source,
                              x.excerpt, x.stems, x.ord, i.created_at,
                              row_number() OVER (PARTITION BY x.excerpt IS NOT NULL
                                                 ORDER BY CASE WHEN x.excerpt IS NOT NULL THEN (
                                                              SELECT count(*) FROM unnest(%(stems)b::text[]) AS w(s)
                                                              WHERE strpos(' ' || x.stems || ' ', ' ' || w.s || ' ') > 0
                                                          ) END DESC, i.created_at DESC, x.ord) AS newest
                       FROM memory_items i
                       CROSS JOIN LATERAL (
                           SELECT CASE WHEN i.definition <> m.definition
                                       THEN left(i.definition, %(excerpt_chars)s) END, i.definition_stems, 0::bigint
                           UNION ALL
                           SELECT left(e.x, %(excerpt_chars)s), e.s, e.n
                           FROM unnest(i.excerpts, i.excerpt_stems) WITH ORDINALITY AS e(x, s, n)
                       ) AS x(excerpt, stems, ord)
                       WHERE i.tenant_id = m.tenant_id AND i.memory_id = m.id{when}
                   ) o
               ) items ON true"""


@dataclass
class HistoricalReads:
    """The read path's queries, answered as of ``as_of``."""

    db: Database
    as_of: datetime

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
        """Exact: superseded vectors are outside the ANN index (the ANN knobs do not apply)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                f"""SELECT m.id, 1.0 - (v.embedding <=> %(q)s) AS vector_sim
                    FROM memory_vectors v
                    JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                    WHERE v.tenant_id = %(tenant)s AND {believed("m")}
                    ORDER BY v.embedding <=> %(q)s
                    LIMIT %(k)s""",
                {"tenant": tenant_id, "q": Vector(list(embedding)), "k": k, "as_of": self.as_of},
            ).fetchall()

    def searchable_rows(self, tenant_id: str, *, at_most: int) -> int:
        """The vectors of what was believed then, counted up to ``at_most``."""
        rows = self.db.tenant_read(
            tenant_id,
            (
                f"""SELECT count(*) AS n FROM (
                        SELECT 1 FROM memory_vectors v
                        JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                        WHERE v.tenant_id = %(tenant)s AND {believed("m")} LIMIT %(n)s) held""",
                {"tenant": tenant_id, "as_of": self.as_of, "n": at_most},
            ),
        )
        return int(rows[0]["n"])

    def text_search(self, tenant_id: str, phrases: Sequence[Sequence[str]], *, k: int, cap: int) -> list[dict]:
        with self.db.tenant_tx(tenant_id) as conn:
            return search_phrases(conn, self.db.dialect, tenant_id, phrases, k=k, cap=cap, as_of=self.as_of)

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
        with self.db.tenant_tx(tenant_id) as conn:
            return rank_text(
                conn,
                self.db.dialect,
                tenant_id,
                query,
                extra,
                phrases,
                k=k,
                cap=cap or k,
                params=params,
                as_of=self.as_of,
            )

    def candidate_pool(self, tenant_id: str, query_vector: Sequence[float], request: PoolRequest) -> list[dict]:
        """The store's candidate pool over what was believed then (edges and occurrences recorded by then)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                candidate_pool_sql(believed, as_of=True, hops=request.hops),
                pool_params(request, tenant_id, query_vector) | {"as_of": self.as_of},
            ).fetchall()
