"""The graph around a memory and the tenant's graph (S11's console), and a memory's predecessors:
bounded, tenant-scoped reads of memories and the edges among them."""

from collections.abc import Sequence
from uuid import UUID

from contextos.config import DecaySettings
from contextos.errors import NotFound
from contextos.ports.rows import GraphColumnsRow, GraphEdgeRow, GraphNodeRow, row_of, rows_of
from contextos.scopes import ScopeFilter
from contextos.store.db import Conn, Database
from contextos.store.scopes import scope_params, scope_predicate
from contextos.store.sql import band_case, current_strength

# A ``related`` pair is stored both ways (each end's walk finds the other); the graph sends it once,
# from the smaller id. Every other type has a direction of its own.
ONE_EDGE_PER_RELATED_PAIR = """NOT (r.type = 'related' AND r.src_id > r.dst_id AND EXISTS (
        SELECT 1 FROM relationships b
        WHERE b.tenant_id = r.tenant_id AND b.src_id = r.dst_id AND b.dst_id = r.src_id AND b.type = 'related'))"""


class GraphReads:
    """The graph reads, on the management store (``db``, ``decay``)."""

    db: Database
    decay: DecaySettings

    # -- the graph ---------------------------------------------------------------------------
    def graph_around(
        self, tenant_id: str, memory_id: UUID, *, hops: int, limit: int, scope: ScopeFilter | None = None
    ) -> tuple[list[GraphNodeRow], list[GraphEdgeRow], bool]:
        """Live memories within ``hops`` typed edges of one (either direction), nearest first, at most
        ``limit``; and every edge among them."""
        strength = current_strength("m")
        params = {"tenant": tenant_id, "id": memory_id, "hops": hops, "limit": limit + 1} | scope_params(scope)
        in_scope = scope_predicate("m", scope, self.db.dialect)
        with self.db.tenant_tx(tenant_id) as conn:
            if not conn.execute(
                "SELECT 1 FROM memories m WHERE m.tenant_id = %(tenant)s AND m.id = %(id)s AND m.forgotten_at IS NULL",
                params,
            ).fetchone():
                raise NotFound(f"memory {memory_id} not found")
            nodes = conn.execute(
                f"""WITH RECURSIVE walk(id, hops) AS (
                        SELECT %(id)s::uuid, 0
                        UNION
                        SELECT CASE WHEN r.src_id = w.id THEN r.dst_id ELSE r.src_id END, w.hops + 1
                        FROM walk w
                        JOIN relationships r ON r.tenant_id = %(tenant)s AND (r.src_id = w.id OR r.dst_id = w.id)
                        WHERE w.hops < %(hops)s
                    ),
                    nearest AS (SELECT id, min(hops) AS hops FROM walk GROUP BY id)
                    SELECT m.id, m.label, m.type, m.importance, n.hops, {strength} AS strength,
                           {band_case(strength, self.decay)} AS band, c.community
                    FROM nearest n
                    JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = n.id
                    LEFT JOIN memory_communities c ON c.tenant_id = m.tenant_id AND c.memory_id = m.id
                    WHERE m.forgotten_at IS NULL AND m.tier = 'hot'
                      AND (m.id = %(id)s OR (m.state <> 'archived' AND {in_scope}))
                    ORDER BY n.hops, m.importance DESC, m.id
                    LIMIT %(limit)s""",
                params,
            ).fetchall()
            truncated = len(nodes) > limit
            nodes = nodes[:limit]
            edges = self._edges_among(conn, tenant_id, [n["id"] for n in nodes])
        return rows_of(GraphNodeRow, nodes), edges, truncated

    def tenant_graph(
        self, tenant_id: str, *, limit: int, offset: int = 0, scope: ScopeFilter | None = None
    ) -> tuple[list[GraphNodeRow], list[GraphEdgeRow], bool]:
        """One page of the tenant's live memories, most important first (the console), and the edges
        with an end on this page whose other end is on it or an earlier one: paging through every
        page returns each edge among the loaded memories exactly once."""
        strength = current_strength("m")
        params = {"tenant": tenant_id, "offset": offset, "upto": offset + limit} | scope_params(scope)
        # The ranks up to this page (and one more, to tell whether another page follows); strength
        # and band are computed for this page's rows only.
        ranked = self._ranked(scope, "m.id")
        with self.db.tenant_tx(tenant_id) as conn:
            nodes = conn.execute(
                f"""WITH {ranked}
                    SELECT m.id, m.label, m.type, m.importance, 0 AS hops, {strength} AS strength,
                           {band_case(strength, self.decay)} AS band, c.community
                    FROM ranked k
                    JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = k.id
                    LEFT JOIN memory_communities c ON c.tenant_id = m.tenant_id AND c.memory_id = m.id
                    WHERE k.rank >= %(offset)s
                    ORDER BY k.rank""",
                params,
            ).fetchall()
            truncated = len(nodes) > limit
            nodes = nodes[:limit]
            edges = conn.execute(
                f"""WITH {ranked}
                    SELECT r.src_id, r.dst_id, r.type, r.weight
                    FROM relationships r
                    JOIN ranked s ON s.id = r.src_id
                    JOIN ranked d ON d.id = r.dst_id
                    WHERE r.tenant_id = %(tenant)s AND {ONE_EDGE_PER_RELATED_PAIR}
                      AND GREATEST(s.rank, d.rank) >= %(offset)s AND GREATEST(s.rank, d.rank) < %(upto)s
                    ORDER BY r.weight DESC, r.src_id, r.dst_id""",
                params,
            ).fetchall()
        return rows_of(GraphNodeRow, nodes), rows_of(GraphEdgeRow, edges), truncated

    def tenant_graph_columns(
        self, tenant_id: str, *, limit: int, offset: int = 0, scope: ScopeFilter | None = None
    ) -> GraphColumnsRow:
        """`tenant_graph`'s page (same memories, same edges) as columns, in one statement and one row:
        the memories are read once, with what the page shows, as they are ranked; strength and band
        only for the page's rows; an edge names its ends by rank, not by id."""
        strength = current_strength("k")
        params = {"tenant": tenant_id, "offset": offset, "upto": offset + limit} | scope_params(scope)
        ranked = self._ranked(
            scope,
            "m.id, m.label, m.type, m.importance, m.decay_policy, m.decay_rate, m.decay_scale, m.decay_shape,"
            " m.strength_anchor, m.strength_anchor_at",
        )
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                f"""WITH {ranked},
                    page AS (
                        SELECT k.rank, k.id, k.label, k.type, k.importance, c.community,
                               {band_case(strength, self.decay, "k.decay_policy")} AS band
                        FROM ranked k
                        LEFT JOIN memory_communities c ON c.tenant_id = %(tenant)s AND c.memory_id = k.id
                        WHERE k.rank >= %(offset)s AND k.rank < %(upto)s
                    ),
                    edges AS (
                        SELECT s.rank AS src, d.rank AS dst, r.type, r.weight
                        FROM relationships r
                        JOIN ranked s ON s.id = r.src_id
                        JOIN ranked d ON d.id = r.dst_id
                        WHERE r.tenant_id = %(tenant)s AND {ONE_EDGE_PER_RELATED_PAIR}
                          AND GREATEST(s.rank, d.rank) >= %(offset)s AND GREATEST(s.rank, d.rank) < %(upto)s
                    )
                    SELECT (SELECT count(*) FROM ranked) > %(upto)s AS truncated, n.*, e.*
                    FROM (SELECT coalesce(array_agg(id ORDER BY rank), '{{}}') AS ids,
                                 coalesce(array_agg(label ORDER BY rank), '{{}}') AS labels,
                                 coalesce(array_agg(type ORDER BY rank), '{{}}') AS types,
                                 coalesce(array_agg(band ORDER BY rank), '{{}}') AS bands,
                                 coalesce(array_agg(importance ORDER BY rank), '{{}}') AS importance,
                                 coalesce(array_agg(community ORDER BY rank), '{{}}') AS communities
                          FROM page) n,
                         (SELECT coalesce(array_agg(src ORDER BY weight DESC, src, dst), '{{}}') AS edge_src,
                                 coalesce(array_agg(dst ORDER BY weight DESC, src, dst), '{{}}') AS edge_dst,
                                 coalesce(array_agg(type ORDER BY weight DESC, src, dst), '{{}}') AS edge_types,
                                 coalesce(array_agg(weight ORDER BY weight DESC, src, dst), '{{}}') AS edge_weights
                          FROM edges) e""",
                params,
            ).fetchone()
        columns = row_of(GraphColumnsRow, row)
        assert columns is not None  # an aggregate without GROUP BY returns one row
        return columns

    def _ranked(self, scope: ScopeFilter | None, columns: str) -> str:
        """The ``ranked`` CTE: ``columns`` of the tenant's live memories in the graph's order with their
        0-based ``rank``, up to the page's end and one more (whether another page follows)."""
        order = "m.importance DESC, m.access_count DESC, m.id"
        return f"""ranked AS MATERIALIZED (
                SELECT {columns}, (row_number() OVER (ORDER BY {order}) - 1)::int AS rank
                FROM memories m
                WHERE m.tenant_id = %(tenant)s AND m.state = 'active' AND m.tier = 'hot'
                  AND {scope_predicate("m", scope, self.db.dialect, enumerates=True)}
                ORDER BY {order}
                LIMIT %(upto)s + 1
            )"""

    @staticmethod
    def _edges_among(conn: Conn, tenant_id: str, ids: Sequence[UUID]) -> list[GraphEdgeRow]:
        if not ids:
            return []
        return rows_of(
            GraphEdgeRow,
            conn.execute(
                f"""SELECT r.src_id, r.dst_id, r.type, r.weight FROM relationships r
               WHERE r.tenant_id = %(tenant)s AND r.src_id = ANY(%(ids)s) AND r.dst_id = ANY(%(ids)s)
                 AND {ONE_EDGE_PER_RELATED_PAIR}
               ORDER BY r.weight DESC, r.src_id, r.dst_id""",
                {"tenant": tenant_id, "ids": list(ids)},
            ).fetchall(),
        )

    # -- supersession chains for include_history ------------------------------------------------
    def predecessors(self, tenant_id: str, memory_ids: Sequence[UUID]) -> dict[UUID, list[dict]]:
        """Per memory, the versions it superseded (directly or through others), newest first."""
        if not memory_ids:
            return {}
        rows = self.db.tenant_read(
            tenant_id,
            (
                """WITH RECURSIVE back(head, id, depth) AS (
                       SELECT h, h, 0 FROM unnest(%(ids)s::uuid[]) AS h
                       UNION ALL
                       SELECT b.head, m.id, b.depth + 1 FROM back b
                       JOIN memories m ON m.tenant_id = %(tenant)s AND m.superseded_by = b.id
                       WHERE b.depth < 50
                   )
                   SELECT b.head, m.id, m.label, m.definition, m.valid_from, m.valid_to, b.depth
                   FROM back b JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = b.id
                   WHERE b.depth > 0 AND m.forgotten_at IS NULL AND m.tier = 'hot'
                   ORDER BY b.head, b.depth""",
                {"tenant": tenant_id, "ids": list(memory_ids)},
            ),
        )
        out: dict[UUID, list[dict]] = {}
        for row in rows:
            out.setdefault(row["head"], []).append(row)
        return out
