"""The graph around a memory and the tenant's graph (S11's console), and a memory's predecessors:
bounded, tenant-scoped reads of memories and the edges among them."""

from collections.abc import Sequence
from uuid import UUID

from contextos.config import DecaySettings
from contextos.errors import NotFound
from contextos.scopes import ScopeFilter
from contextos.store.db import Conn, Database
from contextos.store.rows import GraphEdgeRow, GraphNodeRow, rows_of
from contextos.store.scopes import scope_params, scope_predicate
from contextos.store.sql import band_case, current_strength


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
        in_scope = scope_predicate("m", scope, self.db.dialect.name)
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
        ranked = f"""ranked AS (
                SELECT m.id, row_number() OVER (ORDER BY m.importance DESC, m.access_count DESC, m.id) AS rank
                FROM memories m
                WHERE m.tenant_id = %(tenant)s AND m.state = 'active' AND m.tier = 'hot'
                  AND {scope_predicate("m", scope, self.db.dialect.name, enumerates=True)}
                ORDER BY m.importance DESC, m.access_count DESC, m.id
                LIMIT %(upto)s + 1
            )"""
        with self.db.tenant_tx(tenant_id) as conn:
            nodes = conn.execute(
                f"""WITH {ranked}
                    SELECT m.id, m.label, m.type, m.importance, 0 AS hops, {strength} AS strength,
                           {band_case(strength, self.decay)} AS band, c.community
                    FROM ranked k
                    JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = k.id
                    LEFT JOIN memory_communities c ON c.tenant_id = m.tenant_id AND c.memory_id = m.id
                    WHERE k.rank > %(offset)s
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
                    WHERE r.tenant_id = %(tenant)s
                      AND GREATEST(s.rank, d.rank) > %(offset)s AND GREATEST(s.rank, d.rank) <= %(upto)s
                    ORDER BY r.weight DESC, r.src_id, r.dst_id""",
                params,
            ).fetchall()
        return rows_of(GraphNodeRow, nodes), rows_of(GraphEdgeRow, edges), truncated

    @staticmethod
    def _edges_among(conn: Conn, tenant_id: str, ids: Sequence[UUID]) -> list[GraphEdgeRow]:
        if not ids:
            return []
        return rows_of(
            GraphEdgeRow,
            conn.execute(
                """SELECT src_id, dst_id, type, weight FROM relationships
               WHERE tenant_id = %(tenant)s AND src_id = ANY(%(ids)s) AND dst_id = ANY(%(ids)s)
               ORDER BY weight DESC, src_id, dst_id""",
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
