"""The workspace's queries (S10): keyset-paginated export pages, and imports and edits by id.

Every statement is set-based over a page or a batch, tenant-scoped, and runs in the caller's
tenant transaction where it writes, so a batch of files lands (or not) with its audit rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings
from contextos.lsh import sketch
from contextos.store.bands import insert_bands, keys_literal
from contextos.store.db import Conn, Database, one
from contextos.store.governance import write_audit
from contextos.store.locks import LOCK_TENANT_SQL
from contextos.store.sql import band_case, current_strength, next_transition
from pgvector import Vector
from psycopg.types.json import Jsonb

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


@dataclass(frozen=True)
class NewMemory:
    """A memory to insert as the file gives it (the id included)."""

    id: UUID
    norm_key: str
    label: str
    definition: str
    type: str
    importance: int
    tags: list[str]
    metadata: dict[str, Any]
    user_id: str | None
    agent_id: str | None
    run_id: str | None
    always_load: bool
    protected: bool
    version: int
    created_at: datetime | None
    updated_at: datetime | None
    strength_anchor: float | None
    strength_anchor_at: datetime | None
    decay_policy: str | None
    decay_rate: float
    decay_scale: float | None
    decay_shape: float | None
    last_accessed_at: datetime | None
    access_count: int
    provenance: str
    base_trust: float
    state: str
    tier: str
    superseded_by: UUID | None
    superseded_at: datetime | None
    valid_from: datetime | None
    valid_to: datetime | None
    recorded_at: datetime | None
    expires_at: datetime | None
    cold_object_key: str | None
    cold_byte_start: int | None
    cold_byte_end: int | None
    initials: str | None
    acronyms: list[str]
    embedding: list[float]


@dataclass(frozen=True)
class NewItem:
    memory_id: UUID
    document_id: UUID | None
    filename: str | None
    session_id: str | None
    message_from: int | None
    message_to: int | None
    label: str
    definition: str
    importance: int
    created_at: datetime | None


_NEW_COLUMNS = [f for f in NewMemory.__dataclass_fields__ if f != "embedding"]
_SQL_TYPES = {
    "id": "uuid", "importance": "smallint", "tags": "text[]", "metadata": "jsonb", "always_load": "boolean",
    "protected": "boolean", "version": "integer", "created_at": "timestamptz", "updated_at": "timestamptz",
    "strength_anchor": "float8", "strength_anchor_at": "timestamptz", "decay_rate": "float8",
    "decay_scale": "float8", "decay_shape": "float8", "last_accessed_at": "timestamptz", "access_count": "integer",
    "base_trust": "float8", "superseded_by": "uuid", "superseded_at": "timestamptz", "valid_from": "timestamptz",
    "valid_to": "timestamptz", "recorded_at": "timestamptz", "expires_at": "timestamptz",
    "cold_byte_start": "int8", "cold_byte_end": "int8", "acronyms": "text[]",
}  # fmt: skip


class WorkspaceStore:
    def __init__(self, db: Database, decay: DecaySettings) -> None:
        self.db = db
        self.decay = decay

    def transaction(self, tenant_id: str) -> AbstractContextManager[Conn]:
        """The tenant's transaction a service runs its import steps in (row-level security on)."""
        return self.db.tenant_tx(tenant_id)

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

    def rows_by_id(self, conn: Conn, tenant_id: str, ids: Sequence[UUID], *, lock: bool = False) -> dict[UUID, dict]:
        """The export rows of these ids in this tenant (``lock``: held for update until commit)."""
        if not ids:
            return {}
        if lock:
            conn.execute(
                "SELECT id FROM memories WHERE tenant_id = %s AND id = ANY(%s) ORDER BY id FOR UPDATE",
                [tenant_id, list(ids)],
            )
        rows = conn.execute(
            f"SELECT {_EXPORT_COLUMNS} FROM memories m WHERE m.tenant_id = %s AND m.id = ANY(%s)",
            [tenant_id, list(ids)],
        ).fetchall()
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

    # -- import ------------------------------------------------------------------------------
    @staticmethod
    def lock_tenant(conn: Conn, tenant_id: str) -> int:
        return int(one(conn.execute(LOCK_TENANT_SQL, [tenant_id]).fetchone())["hot_memories"])

    @staticmethod
    def active_keys(conn: Conn, tenant_id: str, keys: Sequence[str]) -> dict[str, UUID]:
        if not keys:
            return {}
        rows = conn.execute(
            """SELECT norm_key, id FROM memories
               WHERE tenant_id = %s AND state = 'active' AND norm_key = ANY(%s::text[])""",
            [tenant_id, list(keys)],
        ).fetchall()
        return {r["norm_key"]: r["id"] for r in rows}

    def insert_memories(
        self,
        conn: Conn,
        tenant_id: str,
        memories: Sequence[NewMemory],
        items: Sequence[NewItem],
        *,
        embedder_id: str,
        actor: str,
        reason: str,
    ) -> None:
        """Insert memories with their given ids and fields, their vectors and LSH bands, their
        items (a referenced document the tenant lacks is recreated as a record-only stub), the
        tenant's hot count and one ``admitted`` audit row each."""
        if not memories:
            return
        d = self.decay
        rows = [{c: _json_value(getattr(m, c)) for c in _NEW_COLUMNS} for m in memories]
        record = ", ".join(f"{c} {_SQL_TYPES.get(c, 'text')}" for c in _NEW_COLUMNS)
        anchor = f"COALESCE(r.strength_anchor, {float(d.initial_strength)})"
        anchor_at = "COALESCE(r.strength_anchor_at, now())"
        strength = (
            f"(CASE WHEN COALESCE(r.decay_policy, 'exponential') = 'weibull'"
            f" THEN {anchor} * exp(-power(GREATEST(extract(epoch FROM (now() - {anchor_at})), 0) / 86400.0"
            f" / r.decay_scale, r.decay_shape))"
            f" ELSE {anchor} * power(1.0 - r.decay_rate, GREATEST(extract(epoch FROM (now() - {anchor_at})), 0)"
            f" / 86400.0) END)"
        )
        conn.execute(
            f"""INSERT INTO memories (tenant_id, id, norm_key, label, definition, type, importance, tags, metadata,
                    user_id, agent_id, run_id, always_load, protected, version, created_at, updated_at,
                    strength_anchor, strength_anchor_at, decay_policy, decay_rate, decay_scale, decay_shape,
                    strength, band, strength_materialized_at, next_transition_at,
                    last_accessed_at, access_count, provenance, base_trust, state, tier, superseded_by,
                    superseded_at, valid_from, valid_to, recorded_at, expires_at, cold_object_key, cold_byte_start,
                    cold_byte_end, initials, acronyms)
                SELECT %(tenant)s, r.id, r.norm_key, r.label, r.definition, r.type, r.importance, r.tags, r.metadata,
                       r.user_id, r.agent_id, r.run_id, r.always_load, r.protected, r.version,
                       COALESCE(r.created_at, now()), COALESCE(r.updated_at, r.created_at, now()),
                       {anchor}, {anchor_at}, COALESCE(r.decay_policy, 'exponential'), r.decay_rate,
                       r.decay_scale, r.decay_shape,
                       {strength}, {band_case(strength, d, "COALESCE(r.decay_policy, 'exponential')")}, now(),
                       CASE WHEN r.state = 'active' AND r.tier = 'hot' THEN {
                next_transition(
                    anchor,
                    anchor_at,
                    "r.decay_rate",
                    strength,
                    d,
                    policy_sql="COALESCE(r.decay_policy, 'exponential')",
                    scale_sql="r.decay_scale",
                    shape_sql="r.decay_shape",
                )
            } END,
                       COALESCE(r.last_accessed_at, now()), r.access_count, r.provenance, r.base_trust, r.state,
                       r.tier, r.superseded_by, r.superseded_at, COALESCE(r.valid_from, r.created_at, now()),
                       r.valid_to, COALESCE(r.recorded_at, r.created_at, now()), r.expires_at, r.cold_object_key,
                       r.cold_byte_start, r.cold_byte_end, r.initials, r.acronyms
                FROM jsonb_to_recordset(%(rows)s) AS r({record})""",
            {"tenant": tenant_id, "rows": Jsonb(rows)},
        )
        lsh = sketch([m.embedding for m in memories])
        ids = [m.id for m in memories]
        conn.execute(
            """INSERT INTO memory_vectors (tenant_id, memory_id, type, searchable, cold, embedding, embedder_id,
                                           band_keys)
               SELECT %s, i, t, s, c, e, %s, k::int[]
               FROM unnest(%s::uuid[], %s::text[], %s::bool[], %s::bool[], %s::vector[], %s::text[])
                   AS v(i, t, s, c, e, k)""",
            [
                tenant_id,
                embedder_id,
                ids,
                [m.type for m in memories],
                [m.state == "active" and m.tier == "hot" for m in memories],
                [m.tier == "cold" for m in memories],
                [Vector(m.embedding) for m in memories],
                [keys_literal(k) for k in lsh.band_keys],
            ],
        )
        insert_bands(conn, tenant_id, ids, lsh.signatures, lsh.band_keys, fresh=True)
        self._insert_items(conn, tenant_id, items)
        hot = sum(1 for m in memories if m.state == "active" and m.tier == "hot")
        if hot:
            conn.execute("UPDATE tenants SET hot_memories = hot_memories + %s WHERE tenant_id = %s", [hot, tenant_id])
        write_audit(
            conn,
            tenant_id,
            [
                {
                    "actor": actor,
                    "action": "admitted",
                    "memory_id": m.id,
                    "reason": reason,
                    "details": {"via": "workspace"},
                }
                for m in memories
            ],
        )

    @staticmethod
    def _insert_items(conn: Conn, tenant_id: str, items: Sequence[NewItem]) -> None:
        if not items:
            return
        documents = {(i.document_id, i.filename) for i in items if i.document_id is not None}
        if documents:
            conn.execute(
                """INSERT INTO documents (tenant_id, id, content_hash, filename, status, source_type, metadata)
                   SELECT %s, d, 'workspace:' || d::text, f, 'done', 'workspace', '{"stub": true}'::jsonb
                   FROM unnest(%s::uuid[], %s::text[]) AS t(d, f)
                   ON CONFLICT DO NOTHING""",
                [tenant_id, [d for d, _ in documents], [f for _, f in documents]],
            )
        conn.execute(
            """INSERT INTO memory_items (tenant_id, memory_id, document_id, session_id, message_from, message_to,
                                         label, definition, importance, created_at)
               SELECT %s, m, d, s, f, t, l, x, i, COALESCE(c, now())
               FROM unnest(%s::uuid[], %s::uuid[], %s::text[], %s::int[], %s::int[], %s::text[], %s::text[],
                           %s::int[], %s::timestamptz[]) AS u(m, d, s, f, t, l, x, i, c)""",
            [
                tenant_id,
                [i.memory_id for i in items],
                [i.document_id for i in items],
                [i.session_id for i in items],
                [i.message_from for i in items],
                [i.message_to for i in items],
                [i.label for i in items],
                [i.definition for i in items],
                [i.importance for i in items],
                [i.created_at for i in items],
            ],
        )

    @staticmethod
    def insert_edges(conn: Conn, tenant_id: str, edges: Sequence[tuple[UUID, UUID, str, float]]) -> int:
        """Edges between memories of this tenant (one whose end is missing is left out); how many."""
        if not edges:
            return 0
        rows = conn.execute(
            """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
               SELECT %(tenant)s, e.s, e.d, e.t, e.w
               FROM unnest(%(src)s::uuid[], %(dst)s::uuid[], %(types)s::text[], %(weights)s::float8[]) AS e(s, d, t, w)
               WHERE e.s <> e.d
                 AND EXISTS (SELECT 1 FROM memories x WHERE x.tenant_id = %(tenant)s AND x.id = e.s)
                 AND EXISTS (SELECT 1 FROM memories y WHERE y.tenant_id = %(tenant)s AND y.id = e.d)
               ON CONFLICT (tenant_id, src_id, dst_id, type) DO UPDATE SET weight = EXCLUDED.weight
               RETURNING 1""",
            {
                "tenant": tenant_id,
                "src": [e[0] for e in edges],
                "dst": [e[1] for e in edges],
                "types": [e[2] for e in edges],
                "weights": [e[3] for e in edges],
            },
        ).fetchall()
        return len(rows)

    def finish_document(self, tenant_id: str, document_id: UUID, counts: dict[str, Any]) -> None:
        """A dropped workspace file's document is done; its counts are the file's report."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE documents SET status = 'done', error = NULL, source_type = 'workspace', counts = %s,
                          updated_at = now()
                   WHERE tenant_id = %s AND id = %s""",
                [Jsonb(counts), tenant_id, document_id],
            )

    # -- edits -------------------------------------------------------------------------------


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, UUID):
        return str(value)
    return value
