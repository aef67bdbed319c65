"""The workspace's reads (S10): keyset-paginated export pages, the rows an import compares its
files with, and a router file's memories. Every statement is set-based over a page or a batch and
tenant-scoped; what an import writes goes through admission (``contextos.store.given``).
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from contextos.store.db import Database
from contextos.store.sql import current_strength

# One memory as the workspace renders it: its row, its outgoing edges and its sources.
_EXPORT_COLUMNS = """m.id, m.label, m.definition, m.type, m.importance, m.tags, m.metadata,
       m.user_id, m.agent_id, m.run_id, m.created_at, m.updated_at, m.version, m.always_load, m.protected,
       m.strength_anchor, m.strength_anchor_at, m.decay_policy, m.decay_rate, m.decay_scale, m.decay_shape,
       m.last_accessed_at, m.access_count, m.provenance, m.base_trust, m.state, m.tier, m.superseded_by,
       m.superseded_at, m.valid_from, m.valid_to, m.recorded_at, m.expires_at, m.norm_key,
       m.cold_object_key, m.cold_byte_start, m.cold_byte_end,
       (SELECT COALESCE(json_agg(json_build_object('id', r.dst_id, 'type', r.type, 'weight', r.weight)
                                 ORDER BY r.type, r.dst_id), '[]'::json)
        FROM relationships r WHERE r.tenant_id = m.tenant_id AND r.src_id = m.id) AS edges,
       (SELECT COALESCE(json_agg(json_build_object(
                    'document', i.document_id, 'filename', d.filename, 'session', i.session_id,
                    'message_from', i.message_from, 'message_to', i.message_to, 'at', i.created_at,
                    'importance', i.importance, 'label', i.label, 'excerpt', i.definition)
                 ORDER BY i.created_at, i.label, i.definition, i.document_id, i.session_id, i.message_from), '[]'::json)
        FROM memory_items i
        LEFT JOIN documents d ON d.tenant_id = i.tenant_id AND d.id = i.document_id
        WHERE i.tenant_id = m.tenant_id AND i.memory_id = m.id) AS sources"""


class WorkspaceStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    # -- export ------------------------------------------------------------------------------
    def export_page(self, tenant_id: str, *, after: UUID | None, limit: int, live_only: bool = False) -> list[dict]:
        """Up to ``limit`` memories after ``after`` in id order (the primary key's order); ``live_only``
        leaves out forgotten ones (an export is a full copy; a sync writes back only what is live)."""
        return self.db.tenant_read(
            tenant_id,
            (
                f"""SELECT {_EXPORT_COLUMNS} FROM memories m
                    WHERE m.tenant_id = %(tenant)s AND (%(after)s::uuid IS NULL OR m.id > %(after)s::uuid)
                      AND (NOT %(live)s OR m.forgotten_at IS NULL)
                    ORDER BY m.id LIMIT %(limit)s""",
                {"tenant": tenant_id, "after": after, "limit": limit, "live": live_only},
            ),
        )

    def live_ids(self, tenant_id: str, ids: Sequence[UUID]) -> set[UUID]:
        """Which of these ids are memories of this tenant that are not forgotten."""
        rows = self.db.tenant_read(
            tenant_id,
            (
                "SELECT id FROM memories WHERE tenant_id = %s AND id = ANY(%s) AND forgotten_at IS NULL",
                [tenant_id, list(ids)],
            ),
        )
        return {r["id"] for r in rows}

    def rows_by_id(self, tenant_id: str, ids: Sequence[UUID]) -> dict[UUID, dict]:
        """The export rows of these ids in this tenant (what an import compares its files with)."""
        if not ids:
            return {}
        rows = self.db.tenant_read(
            tenant_id,
            (
                f"SELECT {_EXPORT_COLUMNS} FROM memories m WHERE m.tenant_id = %s AND m.id = ANY(%s)",
                [tenant_id, list(ids)],
            ),
        )
        return {r["id"]: r for r in rows}

    def router_rows(self, tenant_id: str, *, limit: int) -> list[dict]:
        """Active hot memories for a router file: always_load and rules first, then by importance
        and strength (S6.7); the caller fits them into its token budget."""
        return self.db.tenant_read(
            tenant_id,
            (
                f"""SELECT m.id, m.label, m.definition, m.type, m.importance, m.always_load,
                           {current_strength("m")} AS strength
                    FROM memories m
                    WHERE m.tenant_id = %(tenant)s AND m.state = 'active' AND m.tier = 'hot'
                    ORDER BY (m.always_load OR m.type = 'rule') DESC, m.importance DESC,
                             {current_strength("m")} DESC, m.id
                    LIMIT %(limit)s""",
                {"tenant": tenant_id, "limit": limit},
            ),
        )
