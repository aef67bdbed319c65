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

from contextos.store.db import Database
from contextos.store.sql import current_strength
from pgvector import Vector


def believed(alias: str) -> str:
    """The predicate "believed at %(as_of)s" on a memories alias."""
    return (
        f"({alias}.tier = 'hot' AND {alias}.state <> 'archived' AND {alias}.recorded_at <= %(as_of)s"
        f" AND ({alias}.superseded_at IS NULL OR {alias}.superseded_at > %(as_of)s))"
    )


def corroborations(alias: str, as_of: str | None = None) -> str:
    """How many ``corroborates`` edges touch a memory (composite trust, S7)."""
    when = f" AND r.created_at <= {as_of}" if as_of else ""
    return (
        f"(SELECT count(*) FROM relationships r WHERE r.tenant_id = {alias}.tenant_id AND r.type = 'corroborates'"
        f" AND (r.src_id = {alias}.id OR r.dst_id = {alias}.id){when})"
    )


ROW_COLUMNS = (
    "m.id, m.label, m.definition, m.type, m.importance, m.access_count, m.always_load, m.last_accessed_at,"
    " m.provenance, m.base_trust"
)


def live_now(alias: str) -> str:
    """The predicate "in the hot, current store" on a memories alias: what present-time reads see."""
    return f"({alias}.state = 'active' AND {alias}.tier = 'hot')"


def graph_walk_sql(live: Callable[[str], str], *, as_of: bool) -> str:
    """The 2-hop walk of S6 (both directions, weight falling per hop, no walk back to its own seed,
    memories sharing a source as implicit neighbours, a superseded memory leading forward to its
    successor). ``live`` says which memories a read may see; ``as_of`` also drops the edges and
    occurrences recorded after %(as_of)s. The present and the historical read share this text."""
    edge_then = " AND r.created_at <= %(as_of)s" if as_of else ""
    item_then = " AND other.created_at <= %(as_of)s" if as_of else ""
    return f"""WITH RECURSIVE walk(origin, id, weight, hop) AS (
                   SELECT s, s, 1.0::float8, 0 FROM unnest(%(seeds)b::uuid[]) AS s
                   UNION ALL
                   SELECT w.origin, step.next_id, w.weight * step.weight * %(fall)s, w.hop + 1
                   FROM walk w
                   CROSS JOIN LATERAL (
                       SELECT r.dst_id AS next_id, r.weight FROM relationships r
                       WHERE r.tenant_id = %(tenant)s AND r.src_id = w.id AND r.type <> 'contradicts'{edge_then}
                       UNION ALL
                       SELECT r.src_id, r.weight FROM relationships r
                       WHERE r.tenant_id = %(tenant)s AND r.dst_id = w.id AND r.type <> 'contradicts'{edge_then}
                   ) step
                   WHERE w.hop < %(hops)s
               ),
               implicit AS (
                   SELECT other.memory_id AS id, %(shared)s::float8 AS weight
                   FROM memory_items seed
                   JOIN memory_items other
                     ON other.tenant_id = seed.tenant_id AND other.memory_id <> seed.memory_id
                    AND (other.document_id = seed.document_id OR other.session_id = seed.session_id)
                   WHERE seed.tenant_id = %(tenant)s AND seed.memory_id = ANY(%(seeds)b::uuid[]){item_then}
               ),
               reached AS (
                   SELECT id, weight FROM walk WHERE hop > 0 AND id <> origin  -- no round trips home
                   UNION ALL
                   SELECT id, weight FROM implicit
               )
               SELECT COALESCE(successor.id, m.id) AS id, max(reached.weight) AS weight
               FROM reached
               JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = reached.id
               LEFT JOIN memories successor
                 ON successor.tenant_id = m.tenant_id AND successor.id = m.superseded_by
                AND NOT {live("m")} AND {live("successor")}
               WHERE {live("m")} OR successor.id IS NOT NULL
               GROUP BY COALESCE(successor.id, m.id)
               ORDER BY max(reached.weight) DESC, COALESCE(successor.id, m.id)
               LIMIT %(k)s"""


def scored_rows_sql(live: Callable[[str], str], where: str, *, as_of: bool, tail: str = "") -> str:
    """Everything scoring needs for the memories ``where`` picks, with each one's exact cosine to
    %(q)s and its corroborations (recorded by %(as_of)s when ``as_of``)."""
    return f"""SELECT {ROW_COLUMNS}, {current_strength("m")} AS strength,
                      {corroborations("m", "%(as_of)s" if as_of else None)} AS corroborations,
                      COALESCE(1.0 - (v.embedding <=> %(q)s), 0.0) AS vector_sim
               FROM memories m
               LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
               WHERE m.tenant_id = %(tenant)s AND {where} AND {live("m")}
               {tail}"""


@dataclass
class HistoricalReads:
    """The read path's five queries, answered as of ``as_of``."""

    db: Database
    as_of: datetime

    def vector_search(
        self, tenant_id: str, embedding: Sequence[float], *, k: int, ef_search: int = 0, exact_scan_max_rows: int = 0
    ) -> list[dict]:
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                f"""SELECT {ROW_COLUMNS}, {current_strength("m")} AS strength,
                           {corroborations("m", "%(as_of)s")} AS corroborations,
                           1.0 - (v.embedding <=> %(q)s) AS vector_sim
                    FROM memory_vectors v
                    JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                    WHERE v.tenant_id = %(tenant)s AND {believed("m")}
                    ORDER BY v.embedding <=> %(q)s
                    LIMIT %(k)s""",
                {"tenant": tenant_id, "q": Vector(list(embedding)), "k": k, "as_of": self.as_of},
            ).fetchall()

    def text_search(self, tenant_id: str, terms: Sequence[str], *, k: int, cap: int = 500) -> list[dict]:
        from contextos.store.repository import _tsquery_words

        phrase = terms[0]
        params = {
            "phrase": phrase,
            "any_terms": " | ".join(_tsquery_words(terms)) or None,
            "k": k,
            "cap": cap,
            "tenant": tenant_id,
            "lower": phrase.lower(),
            "as_of": self.as_of,
        }
        match self.db.dialect.name:
            case "postgres":
                sql = (
                    "SELECT id, rank, label_match"
                    " FROM contextos_text_search_as_of(%(phrase)s, %(any_terms)s, %(k)s, %(cap)s, %(as_of)s)"
                )
            case "cockroach":
                sql = f"""WITH q AS (
                           SELECT websearch_to_tsquery('english', %(phrase)s) AS phrase_q,
                                  COALESCE(to_tsquery('english', %(any_terms)s), ''::tsquery) AS any_q
                       )
                       SELECT m.id,
                              2.0 * ts_rank_cd(m.search_tsv, q.phrase_q) + ts_rank(m.search_tsv, q.any_q) AS rank,
                              (position(%(lower)s IN lower(m.label)) > 0
                               OR position(%(lower)s IN lower(m.definition)) > 0) AS label_match
                       FROM memories m, q
                       WHERE m.tenant_id = %(tenant)s AND {believed("m")}
                         AND m.search_tsv @@ (q.phrase_q || q.any_q)
                       ORDER BY label_match DESC, rank DESC
                       LIMIT %(k)s"""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(sql, params).fetchall()

    def graph_expand(
        self, tenant_id: str, seeds: Sequence[UUID], *, hops: int, fall: float, shared_source_weight: float, k: int
    ) -> list[dict]:
        """The store's walk over the edges that existed then, ending on memories believed then (a
        memory superseded since leads to the successor believed then, if any)."""
        if not seeds:
            return []
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                graph_walk_sql(believed, as_of=True),
                {
                    "tenant": tenant_id,
                    "seeds": list(seeds),
                    "hops": hops,
                    "fall": fall,
                    "shared": shared_source_weight,
                    "k": k,
                    "as_of": self.as_of,
                },
            ).fetchall()

    def candidate_rows(self, tenant_id: str, ids: Sequence[UUID], query_vector: Sequence[float]) -> list[dict]:
        if not ids:
            return []
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                scored_rows_sql(believed, "m.id = ANY(%(ids)b::uuid[])", as_of=True),
                {"tenant": tenant_id, "ids": list(ids), "q": Vector(list(query_vector)), "as_of": self.as_of},
            ).fetchall()

    def pinned_rows(self, tenant_id: str, query_vector: Sequence[float], *, limit: int = 20) -> list[dict]:
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                scored_rows_sql(
                    believed,
                    "m.always_load",
                    as_of=True,
                    tail="ORDER BY m.importance DESC, m.created_at LIMIT %(limit)s",
                ),
                {"tenant": tenant_id, "q": Vector(list(query_vector)), "limit": limit, "as_of": self.as_of},
            ).fetchall()
