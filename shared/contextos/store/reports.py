"""The queries behind the S9 reports: health inputs, governance sections, communities.

Set-based SQL only, every statement in a tenant transaction (row-level security is the second
wall) and filtered on the tenant. Python receives aggregates, bounded edge lists and bounded
report rows — never a per-memory loop of queries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings, ReportSettings
from contextos.store.bands import band_params
from contextos.store.db import Database, one
from contextos.store.sql import band_case, current_strength
from psycopg.types.json import Jsonb

_ACTIVE_HOT = "m.tenant_id = %(tenant)s AND m.state = 'active' AND m.tier = 'hot'"


class ReportStore:
    def __init__(self, db: Database, decay: DecaySettings, cfg: ReportSettings) -> None:
        self.db = db
        self.decay = decay
        self.cfg = cfg

    # -- health ------------------------------------------------------------------------------
    def health_inputs(self, tenant_id: str, flagged_ids: Sequence[UUID] | None) -> dict[str, Any]:
        """Every count the health score and its report need, in three statements."""
        strength = current_strength("m")
        params = {"tenant": tenant_id, "days": self.cfg.window_days, "flagged": list(flagged_ids or [])}
        with self.db.tenant_tx(tenant_id) as conn:
            totals = conn.execute(
                f"""WITH active AS (
                        SELECT m.id, {strength} AS strength FROM memories m WHERE {_ACTIVE_HOT}
                    ),
                    recent AS (
                        SELECT tokens_used, budget, memory_ids FROM context_log
                        WHERE tenant_id = %(tenant)s AND at >= now() - make_interval(days => %(days)s)
                    ),
                    used AS (SELECT DISTINCT u.id FROM recent, unnest(recent.memory_ids) AS u(id))
                    SELECT
                        (SELECT count(*) FROM active) AS active_memories,
                        (SELECT count(*) FROM active a JOIN used u ON u.id = a.id) AS used_memories,
                        (SELECT avg(strength) FROM active) AS mean_strength,
                        (SELECT count(*) FROM recent) AS queries,
                        (SELECT avg(LEAST(tokens_used::float8 / NULLIF(budget, 0), 1.0)) FROM recent)
                            AS mean_utilization,
                        (SELECT count(*) FROM active WHERE id = ANY(%(flagged)s::uuid[])) AS flagged_memories,
                        (SELECT count(*) FROM memories
                         WHERE tenant_id = %(tenant)s AND state = 'active' AND tier = 'cold') AS active_cold,
                        (SELECT count(*) FROM memories
                         WHERE tenant_id = %(tenant)s AND state = 'superseded') AS superseded,
                        (SELECT count(*) FROM memories
                         WHERE tenant_id = %(tenant)s AND state = 'archived') AS archived,
                        (SELECT count(*) FROM review_queue
                         WHERE tenant_id = %(tenant)s AND status = 'pending') AS pending_reviews,
                        (SELECT count(*) FROM reminders
                         WHERE tenant_id = %(tenant)s AND acknowledged_at IS NULL) AS open_reminders,
                        (SELECT count(*) FROM sessions
                         WHERE tenant_id = %(tenant)s AND status = 'open') AS open_sessions,
                        (SELECT count(*) FROM messages msg
                         JOIN sessions s ON s.tenant_id = msg.tenant_id AND s.id = msg.session_id
                         WHERE msg.tenant_id = %(tenant)s AND msg.seq > s.flushed_through) AS unflushed_messages""",
                params,
            ).fetchone()
            types = conn.execute(
                f"SELECT m.type, count(*) AS n FROM memories m WHERE {_ACTIVE_HOT} GROUP BY m.type ORDER BY m.type",
                params,
            ).fetchall()
            bands = conn.execute(
                f"""SELECT band, count(*) AS n FROM (
                        SELECT {band_case(strength, self.decay)} AS band FROM memories m WHERE {_ACTIVE_HOT}
                    ) b GROUP BY band ORDER BY band""",
                params,
            ).fetchall()
        return dict(one(totals)) | {
            "type_counts": {r["type"]: int(r["n"]) for r in types},
            "band_counts": {r["band"]: int(r["n"]) for r in bands},
        }

    # -- governance sections -------------------------------------------------------------------
    def decay_candidates(self, tenant_id: str) -> tuple[list[UUID], list[dict]]:
        """Active hot memories below the candidate strength (not protected, not always loaded):
        every id, and the weakest ``report_items`` in detail."""
        strength = current_strength("m")
        where = f"""{_ACTIVE_HOT} AND NOT m.protected AND NOT m.always_load AND {strength} < %(threshold)s"""
        params = {"tenant": tenant_id, "threshold": self.cfg.decay_candidate_strength, "k": self.cfg.report_items}
        with self.db.tenant_tx(tenant_id) as conn:
            ids = conn.execute(f"SELECT COALESCE(array_agg(m.id), '{{}}') AS ids FROM memories m WHERE {where}", params)
            all_ids = list(one(ids.fetchone())["ids"])
            rows = conn.execute(
                f"""SELECT m.id, m.label, m.type, m.importance, {strength} AS strength, m.last_accessed_at
                    FROM memories m WHERE {where}
                    ORDER BY {strength}, m.id LIMIT %(k)s""",
                params,
            ).fetchall()
        return all_ids, rows

    def contradiction_edges(self, tenant_id: str) -> list[dict]:
        """Recorded ``contradicts`` edges whose two ends are both still active: unresolved conflicts."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """SELECT a.id AS a_id, a.label AS a_label, a.type AS a_type, a.importance AS a_importance,
                          b.id AS b_id, b.label AS b_label, b.type AS b_type, b.importance AS b_importance
                   FROM relationships r
                   JOIN memories a ON a.tenant_id = r.tenant_id AND a.id = r.src_id AND a.state = 'active'
                   JOIN memories b ON b.tenant_id = r.tenant_id AND b.id = r.dst_id AND b.state = 'active'
                   WHERE r.tenant_id = %(tenant)s AND r.type = 'contradicts'
                   ORDER BY r.updated_at DESC, a.id, b.id""",
                {"tenant": tenant_id},
            ).fetchall()

    def similar_pairs(self, tenant_id: str, *, min_cosine: float, limit: int) -> list[dict]:
        """Pairs of searchable (hot, active) memories at or above ``min_cosine``, most similar first.

        Candidates are the pairs sharing an LSH band (the same bands the ingest merge uses, see
        contextos.lsh), each checked with the exact cosine: one set-based self-join, no ANN probe
        per memory. Buckets larger than ``lsh_bucket_max_members`` are skipped to bound the join.
        """
        dialect = self.db.dialect
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                f"""WITH buckets AS (
                       SELECT b.band_key FROM memory_vector_bands b WHERE {dialect.band_tenant_sql("b")}
                       GROUP BY b.band_key HAVING count(*) BETWEEN 2 AND %(bucket_max)s
                   ),
                   pairs AS (
                       SELECT DISTINCT x.memory_id AS a_id, y.memory_id AS b_id
                       FROM buckets k
                       JOIN memory_vector_bands x ON {dialect.band_match_sql("x", "k.band_key")}
                       JOIN memory_vector_bands y ON {dialect.band_match_sql("y", "k.band_key")}
                                                 AND x.memory_id < y.memory_id
                   )
                   SELECT p.a_id, p.b_id, 1.0 - (va.embedding <=> vb.embedding) AS similarity,
                          a.label AS a_label, a.norm_key AS a_key, a.type AS a_type, a.importance AS a_importance,
                          a.definition AS a_definition, a.created_at AS a_created_at, a.access_count AS a_access,
                          b.label AS b_label, b.norm_key AS b_key, b.type AS b_type, b.importance AS b_importance,
                          b.definition AS b_definition, b.created_at AS b_created_at, b.access_count AS b_access
                   FROM pairs p
                   JOIN memory_vectors va ON va.tenant_id = %(tenant)s AND va.memory_id = p.a_id AND va.searchable
                   JOIN memory_vectors vb ON vb.tenant_id = %(tenant)s AND vb.memory_id = p.b_id AND vb.searchable
                   JOIN memories a ON a.tenant_id = %(tenant)s AND a.id = p.a_id AND a.state = 'active'
                   JOIN memories b ON b.tenant_id = %(tenant)s AND b.id = p.b_id AND b.state = 'active'
                   WHERE 1.0 - (va.embedding <=> vb.embedding) >= %(min_cosine)s
                   ORDER BY similarity DESC, p.a_id, p.b_id
                   LIMIT %(limit)s""",
                band_params(tenant_id)
                | {
                    "bucket_max": self.cfg.lsh_bucket_max_members,
                    "min_cosine": min_cosine,
                    "limit": limit,
                },
            ).fetchall()

    def god_nodes(self, tenant_id: str) -> tuple[list[UUID], list[dict]]:
        """Active memories with many explicit neighbours (distinct, active) but low importance."""
        sql = """WITH ends AS (
                     SELECT r.src_id AS id, r.dst_id AS other FROM relationships r WHERE r.tenant_id = %(tenant)s
                     UNION
                     SELECT r.dst_id, r.src_id FROM relationships r WHERE r.tenant_id = %(tenant)s
                 ),
                 degree AS (
                     SELECT e.id, count(*) AS degree FROM ends e
                     JOIN memories o ON o.tenant_id = %(tenant)s AND o.id = e.other AND o.state = 'active'
                     WHERE e.id <> e.other
                     GROUP BY e.id HAVING count(*) >= %(min_degree)s
                 )
                 SELECT m.id, m.label, m.type, m.importance, d.degree
                 FROM degree d JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = d.id
                 WHERE m.state = 'active' AND m.importance <= %(max_importance)s
                 ORDER BY d.degree DESC, m.importance, m.id"""
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                sql,
                {
                    "tenant": tenant_id,
                    "min_degree": self.cfg.god_node_min_degree,
                    "max_importance": self.cfg.god_node_max_importance,
                },
            ).fetchall()
        return [r["id"] for r in rows], rows[: self.cfg.report_items]

    def community_edges(self, tenant_id: str) -> tuple[list[dict], int, int]:
        """The Louvain input: explicit edges (any type but ``contradicts``) between active memories,
        plus implicit edges between memories sharing ≥ ``implicit_min_shared`` sources (documents or
        sessions) or tags — computed here, in SQL. Undirected (a < b), one row per pair, explicit
        first, heaviest first, at most ``community_max_edges + 1`` rows (one more tells the caller
        the cap was hit). Returns (edges, explicit count, implicit count) over the full graph."""
        cfg = self.cfg
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """WITH active AS (
                       SELECT id, tags FROM memories WHERE tenant_id = %(tenant)s AND state = 'active'
                   ),
                   explicit AS (
                       SELECT LEAST(r.src_id, r.dst_id) AS a, GREATEST(r.src_id, r.dst_id) AS b,
                              max(r.weight) AS weight
                       FROM relationships r
                       JOIN active s ON s.id = r.src_id
                       JOIN active d ON d.id = r.dst_id
                       WHERE r.tenant_id = %(tenant)s AND r.type <> 'contradicts' AND r.src_id <> r.dst_id
                       GROUP BY 1, 2
                   ),
                   sources AS (
                       SELECT DISTINCT i.memory_id,
                              COALESCE('d:' || i.document_id::text, 's:' || i.session_id) AS source
                       FROM memory_items i JOIN active a ON a.id = i.memory_id
                       WHERE i.tenant_id = %(tenant)s AND (i.document_id IS NOT NULL OR i.session_id IS NOT NULL)
                   ),
                   labels AS (  -- sources and tags: one namespace of things memories can share
                       SELECT memory_id, source AS label FROM sources
                       UNION ALL
                       SELECT DISTINCT a.id, 't:' || t.tag FROM active a, unnest(a.tags) AS t(tag)
                   ),
                   small AS (
                       SELECT label FROM labels GROUP BY label HAVING count(*) BETWEEN 2 AND %(max_members)s
                   ),
                   shared AS (
                       SELECT x.memory_id AS a, y.memory_id AS b,
                              sum(CASE WHEN x.label LIKE 't:%%' THEN 0 ELSE 1 END) AS sources,
                              sum(CASE WHEN x.label LIKE 't:%%' THEN 1 ELSE 0 END) AS tags
                       FROM labels x
                       JOIN small k ON k.label = x.label
                       JOIN labels y ON y.label = x.label AND x.memory_id < y.memory_id
                       GROUP BY 1, 2
                   ),
                   implicit AS (
                       SELECT a, b FROM shared WHERE sources >= %(min_shared)s OR tags >= %(min_shared)s
                   ),
                   merged AS (
                       SELECT COALESCE(e.a, i.a) AS a, COALESCE(e.b, i.b) AS b,
                              COALESCE(e.weight, 0.0) + CASE WHEN i.a IS NULL THEN 0.0 ELSE %(weight)s END AS weight,
                              e.a IS NOT NULL AS explicit, i.a IS NOT NULL AS implicit
                       FROM explicit e FULL JOIN implicit i ON i.a = e.a AND i.b = e.b
                   )
                   SELECT a, b, weight, explicit, implicit,
                          sum(CASE WHEN explicit THEN 1 ELSE 0 END) OVER () AS explicit_total,
                          sum(CASE WHEN implicit THEN 1 ELSE 0 END) OVER () AS implicit_total
                   FROM merged
                   ORDER BY explicit DESC, weight DESC, a, b
                   LIMIT %(cap)s""",
                {
                    "tenant": tenant_id,
                    "max_members": cfg.implicit_source_max_members,
                    "min_shared": cfg.implicit_min_shared,
                    "weight": cfg.implicit_edge_weight,
                    "cap": cfg.community_max_edges + 1,
                },
            ).fetchall()
        explicit = int(rows[0]["explicit_total"]) if rows else 0
        implicit = int(rows[0]["implicit_total"]) if rows else 0
        return rows, explicit, implicit

    def memory_refs(self, tenant_id: str, ids: Sequence[UUID]) -> dict[UUID, dict]:
        """id → label, type, importance, access count for a bounded set of memories (one query)."""
        if not ids:
            return {}
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT id, label, type, importance, access_count, created_at FROM memories
                   WHERE tenant_id = %s AND id = ANY(%s::uuid[])""",
                [tenant_id, list(ids)],
            ).fetchall()
        return {r["id"]: r for r in rows}

    # -- writes ------------------------------------------------------------------------------
    def replace_communities(self, tenant_id: str, communities: dict[UUID, int]) -> None:
        """Swap the tenant's community assignment for a new one in one transaction. Running twice
        at once is harmless: the upsert leaves exactly one community per memory."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("DELETE FROM memory_communities WHERE tenant_id = %s", [tenant_id])
            if communities:
                conn.execute(
                    """INSERT INTO memory_communities (tenant_id, memory_id, community)
                       SELECT %s, m, c FROM unnest(%b::uuid[], %b::int[]) AS t(m, c)
                       ON CONFLICT (tenant_id, memory_id) DO UPDATE
                       SET community = EXCLUDED.community, computed_at = now()""",
                    [tenant_id, list(communities), list(communities.values())],
                )

    def save_governance(self, tenant_id: str, report: dict, *, trigger: str, flagged_ids: Sequence[UUID]) -> dict:
        """Store a report; keep the newest ``reports_kept`` of the tenant. Returns its id and time."""
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                """INSERT INTO governance_reports (tenant_id, trigger, report, flagged_ids)
                   VALUES (%s, %s, %s, %s::uuid[]) RETURNING id, computed_at""",
                [tenant_id, trigger, Jsonb(report), list(flagged_ids)],
            ).fetchone()
            conn.execute(
                """DELETE FROM governance_reports WHERE tenant_id = %(tenant)s AND id NOT IN (
                       SELECT id FROM governance_reports WHERE tenant_id = %(tenant)s
                       ORDER BY computed_at DESC, id LIMIT %(keep)s)""",
                {"tenant": tenant_id, "keep": max(self.cfg.reports_kept, 1)},
            )
        return one(row)

    def latest_governance(self, tenant_id: str) -> dict | None:
        """The tenant's newest stored report (id, computed_at, report, flagged ids), or None."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """SELECT id, computed_at, trigger, report, flagged_ids FROM governance_reports
                   WHERE tenant_id = %s ORDER BY computed_at DESC, id LIMIT 1""",
                [tenant_id],
            ).fetchone()

    def community_samples(self, tenant_id: str, community_ids: Sequence[int], per_community: int) -> dict[int, list]:
        """community → its most important members' labels (one windowed query)."""
        if not community_ids:
            return {}
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT community, label FROM (
                       SELECT c.community, m.label,
                              row_number() OVER (PARTITION BY c.community
                                                 ORDER BY m.importance DESC, m.label, m.id) AS n
                       FROM memory_communities c
                       JOIN memories m ON m.tenant_id = c.tenant_id AND m.id = c.memory_id
                       WHERE c.tenant_id = %(tenant)s AND c.community = ANY(%(ids)s::int[])
                   ) ranked WHERE n <= %(per)s ORDER BY community, n""",
                {"tenant": tenant_id, "ids": list(community_ids), "per": per_community},
            ).fetchall()
        out: dict[int, list] = {}
        for r in rows:
            out.setdefault(r["community"], []).append(r["label"])
        return out


def community_peers(db: Database, tenant_id: str, top_hits: Sequence[UUID], candidates: Sequence[UUID]) -> set[UUID]:
    """The candidates that share a community with a top hit other than themselves (S9's +0.08).

    One indexed query; empty when the tenant has no communities yet, so retrieval is unchanged.
    """
    if not top_hits or not candidates:
        return set()
    with db.tenant_tx(tenant_id) as conn:
        rows = conn.execute(
            """SELECT c.memory_id
               FROM memory_communities c
               WHERE c.tenant_id = %(tenant)s AND c.memory_id = ANY(%(candidates)s::uuid[])
                 AND EXISTS (
                     SELECT 1 FROM memory_communities t
                     WHERE t.tenant_id = %(tenant)s AND t.memory_id = ANY(%(top)s::uuid[])
                       AND t.community = c.community AND t.memory_id <> c.memory_id)""",
            {"tenant": tenant_id, "candidates": list(candidates), "top": list(top_hits)},
        ).fetchall()
    return {r["memory_id"] for r in rows}
