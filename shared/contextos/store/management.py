"""The management side of the store (S11): list, edit, forget and restore memories; list and forget
documents (the graph around a memory: ``contextos.store.graph``). Every statement is tenant-scoped
and set-based.

Forgetting (``forget_hot``) leaves a memory's row in place with state ``archived`` and
``forgotten_at`` set: no read of the present or the past admits an archived row, and while the row
is hot it still holds what a restore needs. A cold memory's content lives only in its cold object,
so forgetting it removes it there and deletes the row (`ColdStorage.expunge`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, cast
from uuid import UUID

import numpy as np
from contextos.config import DecaySettings
from contextos.errors import BadRequest, NotFound
from contextos.lsh import sketch
from contextos.management_models import DocumentListQuery, MemoryListQuery
from contextos.store.bands import delete_bands, insert_bands, keys_literal
from contextos.store.db import Conn, Database, one
from contextos.store.governance import write_audit
from contextos.store.graph import GraphReads
from contextos.store.rows import DocumentListRow, LockedDocument, LockedMemory, MemoryListRow, rows_of
from contextos.store.scopes import scope_params, scope_predicate
from contextos.store.sql import band_case, current_strength
from pgvector import Vector
from psycopg.types.json import Jsonb

LIST_COLUMNS = """m.id, m.label, m.definition, m.type, m.importance, m.tier, m.state, m.provenance, m.always_load,
    m.protected, m.user_id, m.agent_id, m.run_id, m.tags, m.metadata, m.version, m.created_at, m.updated_at,
    m.superseded_by, m.forgotten_at"""

# The columns an edit may set, and the ones a revision keeps.
EDITABLE = ("label", "definition", "importance", "type", "tags", "metadata", "always_load", "protected")
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
WRITABLE = (*EDITABLE, *SCOPE_FIELDS, "expires_at")  # a workspace file also carries a scratch memory's expiry


def encode_cursor(at: datetime, row_id: UUID) -> str:
    return base64.urlsafe_b64encode(json.dumps([at.isoformat(), str(row_id)]).encode()).decode()


def decode_cursor(cursor: str | None) -> tuple[datetime, UUID] | None:
    if not cursor:
        return None
    try:
        at, row_id = json.loads(base64.urlsafe_b64decode(cursor.encode()))
        return datetime.fromisoformat(at), UUID(row_id)
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        raise BadRequest("the cursor is not one this API gave") from exc


class ManagementStore(GraphReads):
    def __init__(self, db: Database, decay: DecaySettings) -> None:
        self.db = db
        self.decay = decay

    def transaction(self, tenant_id: str) -> AbstractContextManager[Conn]:
        """The tenant's transaction a service runs its edit, forget and restore steps in (row-level security on)."""
        return self.db.tenant_tx(tenant_id)

    # -- listing ---------------------------------------------------------------------------
    def list_memories(self, tenant_id: str, query: MemoryListQuery) -> tuple[list[MemoryListRow], str | None]:
        """One keyset page, newest first; a forgotten memory is listed only when ``state`` asks for them."""
        strength = current_strength("m")
        forgotten = query.state == "forgotten"  # only asked for: restorable, never in another read
        where = [
            "m.tenant_id = %(tenant)s",
            "m.forgotten_at IS NOT NULL" if forgotten else "m.forgotten_at IS NULL",
            scope_predicate("m", query, self.db.dialect.name, enumerates=True),
        ]
        params: dict[str, Any] = {"tenant": tenant_id, "limit": query.limit + 1} | scope_params(query)
        for field in ("type", "tier") if forgotten else ("type", "state", "tier"):
            value = getattr(query, field)
            if value is not None:
                where.append(f"m.{field} = %({field})s")
                params[field] = str(value)
        if query.band is not None:
            where.append(f"{band_case(strength, self.decay)} = %(band)s")
            params["band"] = query.band.value
        if query.prefix:
            # LIKE's own wildcards in the prefix are matched literally
            escaped = query.prefix.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            where.append("lower(m.label) LIKE %(prefix)s")
            params["prefix"] = escaped + "%"
        after = decode_cursor(query.cursor)
        if after:
            where.append("(m.created_at, m.id) < (%(after_at)s, %(after_id)s)")
            params |= {"after_at": after[0], "after_id": after[1]}
        rows = self.db.tenant_read(
            tenant_id,
            (
                f"""SELECT {LIST_COLUMNS}, {strength} AS strength, {band_case(strength, self.decay)} AS band
                    FROM memories m WHERE {" AND ".join(where)}
                    ORDER BY m.created_at DESC, m.id DESC LIMIT %(limit)s""",
                params,
            ),
        )
        page = rows_of(MemoryListRow, rows[: query.limit])
        more = len(rows) > query.limit
        return page, encode_cursor(page[-1]["created_at"], page[-1]["id"]) if more and page else None

    def list_documents(self, tenant_id: str, query: DocumentListQuery) -> tuple[list[DocumentListRow], str | None]:
        where = ["tenant_id = %(tenant)s"]
        params: dict[str, Any] = {"tenant": tenant_id, "limit": query.limit + 1}
        if query.status is not None:
            where.append("status = %(status)s")
            params["status"] = query.status.value
        if query.user_id is not None:
            where.append("user_id = %(user)s")
            params["user"] = query.user_id
        after = decode_cursor(query.cursor)
        if after:
            where.append("(created_at, id) < (%(after_at)s, %(after_id)s)")
            params |= {"after_at": after[0], "after_id": after[1]}
        rows = self.db.tenant_read(
            tenant_id,
            (
                f"""SELECT id, filename, source_type, status, error, provenance, user_id, agent_id, run_id, tags,
                           created_at, updated_at
                    FROM documents WHERE {" AND ".join(where)}
                    ORDER BY created_at DESC, id DESC LIMIT %(limit)s""",
                params,
            ),
        )
        page = rows_of(DocumentListRow, rows[: query.limit])
        more = len(rows) > query.limit
        return page, encode_cursor(page[-1]["created_at"], page[-1]["id"]) if more and page else None

    # -- reading one for a change ------------------------------------------------------------
    @staticmethod
    def lock_memory(conn: Conn, tenant_id: str, memory_id: UUID) -> LockedMemory:
        """The memory's row (and its vector), locked for this transaction; 404 once forgotten."""
        row = conn.execute(
            """SELECT m.id, m.norm_key, m.label, m.definition, m.type, m.importance, m.tags, m.metadata,
                      m.always_load, m.protected, m.user_id, m.agent_id, m.run_id, m.state, m.tier, m.version,
                      m.superseded_by, m.forgotten_at, m.forgotten_state, m.cold_object_key,
                      v.embedding, v.band_keys, v.embedder_id
               FROM memories m LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
               WHERE m.tenant_id = %s AND m.id = %s
               FOR UPDATE OF m""",
            [tenant_id, memory_id],
        ).fetchone()
        if not row:
            raise NotFound(f"memory {memory_id} not found")
        return cast(LockedMemory, row)

    @staticmethod
    def key_taken(conn: Conn, tenant_id: str, norm_key: str, memory_id: UUID) -> bool:
        return (
            conn.execute(
                "SELECT 1 FROM memories WHERE tenant_id = %s AND norm_key = %s AND state = 'active' AND id <> %s",
                [tenant_id, norm_key, memory_id],
            ).fetchone()
            is not None
        )

    # -- editing -----------------------------------------------------------------------------
    def apply_edit(
        self,
        conn: Conn,
        tenant_id: str,
        row: LockedMemory,
        changes: dict[str, Any],
        *,
        norm_key: str,
        initials: str | None,
        acronyms: Sequence[str],
        embedding: Sequence[float] | None,
        embedder_id: str,
        actor: str,
        reason: str | None = None,
    ) -> int:
        """Keep the current version as a revision, write the changes, replace the vector (and its LSH
        bands) when the text changed, and audit it. Returns the new version."""
        conn.execute(
            """INSERT INTO memory_revisions (tenant_id, memory_id, version, label, definition, type, importance,
                   tags, metadata, always_load, protected, actor)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (tenant_id, memory_id, version) DO NOTHING""",
            [
                tenant_id,
                row["id"],
                row["version"],
                row["label"],
                row["definition"],
                row["type"],
                row["importance"],
                row["tags"],
                Jsonb(row["metadata"]),
                row["always_load"],
                row["protected"],
                actor,
            ],
        )
        sets = [f"{field} = %({field})s" for field in WRITABLE if field in changes]
        params: dict[str, Any] = {f: changes[f] for f in WRITABLE if f in changes}
        if "metadata" in params:
            params["metadata"] = Jsonb(params["metadata"])
        sets += ["norm_key = %(norm_key)s", "initials = %(initials)s", "acronyms = %(acronyms)s"]
        params |= {"norm_key": norm_key, "initials": initials, "acronyms": list(acronyms)}
        version = one(
            conn.execute(
                f"""UPDATE memories SET {", ".join(sets)}, version = version + 1, updated_at = now()
                    WHERE tenant_id = %(tenant)s AND id = %(id)s RETURNING version""",
                params | {"tenant": tenant_id, "id": row["id"]},
            ).fetchone()
        )["version"]
        if embedding is not None and row["embedding"] is not None:
            lsh = sketch(np.asarray([embedding], dtype=np.float32))
            delete_bands(conn, self.db.dialect, tenant_id, [row["id"]])
            conn.execute(
                """UPDATE memory_vectors SET embedding = %s, embedder_id = %s, type = %s, band_keys = %s::int[],
                          indexed = false, updated_at = now()
                   WHERE tenant_id = %s AND memory_id = %s""",
                [
                    Vector(list(embedding)),
                    embedder_id,
                    changes.get("type", row["type"]),
                    keys_literal(lsh.band_keys[0]),
                    tenant_id,
                    row["id"],
                ],
            )
            insert_bands(conn, tenant_id, [row["id"]], lsh.signatures, lsh.band_keys, fresh=False)
        elif "type" in changes:
            conn.execute(
                "UPDATE memory_vectors SET type = %s WHERE tenant_id = %s AND memory_id = %s",
                [changes["type"], tenant_id, row["id"]],
            )
        write_audit(
            conn,
            tenant_id,
            [
                {
                    "actor": actor,
                    "action": "edited",
                    "memory_id": row["id"],
                    "reason": reason,
                    "details": {"fields": sorted(changes), "version": version, "reembedded": embedding is not None},
                }
            ],
        )
        return version

    # -- forgetting and restoring -------------------------------------------------------------
    @staticmethod
    def taught_only_by(conn: Conn, tenant_id: str, memory_id: UUID, actor: str) -> bool:
        """Whether every admission of (or merge into) this memory was ``actor``'s."""
        row = conn.execute(
            """SELECT count(*) > 0 AND bool_and(actor = %s) AS own FROM audit_log
               WHERE tenant_id = %s AND memory_id = %s AND action IN ('admitted', 'merged')""",
            [actor, tenant_id, memory_id],
        ).fetchone()
        return bool(row and row["own"])

    def forget_hot(self, conn: Conn, tenant_id: str, row: LockedMemory, *, actor: str, reason: str | None) -> None:
        """Out of every read, restorable: archived state, unsearchable vector, no LSH bands."""
        delete_bands(conn, self.db.dialect, tenant_id, [row["id"]])
        conn.execute(
            """UPDATE memories SET forgotten_state = state, state = 'archived', forgotten_at = now(),
                      next_transition_at = NULL, updated_at = now()
               WHERE tenant_id = %s AND id = %s""",
            [tenant_id, row["id"]],
        )
        conn.execute(
            "UPDATE memory_vectors SET searchable = false WHERE tenant_id = %s AND memory_id = %s",
            [tenant_id, row["id"]],
        )
        if row["state"] == "active" and row["tier"] == "hot":
            conn.execute(
                "UPDATE tenants SET hot_memories = GREATEST(hot_memories - 1, 0) WHERE tenant_id = %s", [tenant_id]
            )
        write_audit(conn, tenant_id, [{"actor": actor, "action": "deleted", "memory_id": row["id"], "reason": reason}])

    def restore(
        self, conn: Conn, tenant_id: str, row: LockedMemory, *, state: str, norm_key: str, actor: str, undo: str
    ) -> None:
        """Back to ``state`` under ``norm_key``: searchable again when active, bands rebuilt, audited."""
        conn.execute(
            """UPDATE memories SET state = %(state)s, norm_key = %(key)s, forgotten_at = NULL, forgotten_state = NULL,
                      superseded_by = CASE WHEN %(undo)s = 'supersession' THEN NULL ELSE superseded_by END,
                      superseded_at = CASE WHEN %(undo)s = 'supersession' THEN NULL ELSE superseded_at END,
                      valid_to = CASE WHEN %(undo)s = 'supersession' THEN NULL ELSE valid_to END,
                      updated_at = now()
               WHERE tenant_id = %(tenant)s AND id = %(id)s""",
            {"state": state, "key": norm_key, "undo": undo, "tenant": tenant_id, "id": row["id"]},
        )
        if undo == "supersession" and row["superseded_by"]:
            conn.execute(
                """DELETE FROM relationships
                   WHERE tenant_id = %s AND src_id = %s AND dst_id = %s AND type = 'supersedes'""",
                [tenant_id, row["superseded_by"], row["id"]],
            )
        active = state == "active" and row["tier"] == "hot"
        if row["embedding"] is not None:
            conn.execute(
                "UPDATE memory_vectors SET searchable = %s, indexed = false WHERE tenant_id = %s AND memory_id = %s",
                [active, tenant_id, row["id"]],
            )
            if undo == "forget":
                lsh = sketch(np.asarray([row["embedding"].to_list()], dtype=np.float32))
                insert_bands(conn, tenant_id, [row["id"]], lsh.signatures, lsh.band_keys, fresh=False)
        if active:
            conn.execute("UPDATE tenants SET hot_memories = hot_memories + 1 WHERE tenant_id = %s", [tenant_id])
        details = {"undo": undo} | ({"successor": str(row["superseded_by"])} if row["superseded_by"] else {})
        write_audit(
            conn, tenant_id, [{"actor": actor, "action": "restored", "memory_id": row["id"], "details": details}]
        )

    def delete_memories(self, conn: Conn, tenant_id: str, ids: Sequence[UUID], *, actor: str, reason: str) -> None:
        """Remove memories outright (their vectors, bands, items, edges and revisions with them)."""
        if not ids:
            return
        delete_bands(conn, self.db.dialect, tenant_id, ids)
        active = one(
            conn.execute(
                """SELECT count(*) AS n FROM memories
                   WHERE tenant_id = %s AND id = ANY(%s) AND state = 'active' AND tier = 'hot'""",
                [tenant_id, list(ids)],
            ).fetchone()
        )["n"]
        conn.execute("DELETE FROM memories WHERE tenant_id = %s AND id = ANY(%s)", [tenant_id, list(ids)])
        if active:
            conn.execute(
                "UPDATE tenants SET hot_memories = GREATEST(hot_memories - %s, 0) WHERE tenant_id = %s",
                [active, tenant_id],
            )
        write_audit(
            conn, tenant_id, [{"actor": actor, "action": "deleted", "memory_id": i, "reason": reason} for i in ids]
        )

    # -- documents ---------------------------------------------------------------------------
    @staticmethod
    def lock_document(conn: Conn, tenant_id: str, document_id: UUID) -> LockedDocument:
        row = conn.execute(
            """SELECT id, status, raw_s3_key, source_s3_key, upload_s3_key FROM documents
               WHERE tenant_id = %s AND id = %s FOR UPDATE""",
            [tenant_id, document_id],
        ).fetchone()
        if not row:
            raise NotFound(f"document {document_id} not found")
        return cast(LockedDocument, row)

    @staticmethod
    def document_memories(conn: Conn, tenant_id: str, document_id: UUID) -> dict[str, list[UUID]]:
        """The hot memories a document taught: ``sole`` (no other source) and ``shared``; and the cold
        ones its admissions touched (their occurrences live in their cold objects)."""
        rows = conn.execute(
            """SELECT i.memory_id,
                      bool_and(EXISTS (
                          SELECT 1 FROM memory_items o
                          WHERE o.tenant_id = i.tenant_id AND o.memory_id = i.memory_id
                            AND (o.document_id IS DISTINCT FROM i.document_id OR o.session_id IS NOT NULL)
                      )) AS shared
               FROM memory_items i
               WHERE i.tenant_id = %s AND i.document_id = %s
               GROUP BY i.memory_id""",
            [tenant_id, document_id],
        ).fetchall()
        cold = conn.execute(
            """SELECT DISTINCT m.id FROM audit_log a
               JOIN memories m ON m.tenant_id = a.tenant_id AND m.id = a.memory_id
               WHERE a.tenant_id = %s AND a.details->>'document_id' = %s AND m.tier = 'cold'""",
            [tenant_id, str(document_id)],
        ).fetchall()
        return {
            "sole": [r["memory_id"] for r in rows if not r["shared"]],
            "shared": [r["memory_id"] for r in rows if r["shared"]],
            "cold": [r["id"] for r in cold],
        }

    @staticmethod
    def delete_document(conn: Conn, tenant_id: str, document_id: UUID, shared: Sequence[UUID]) -> int:
        """Delete the document (its raw text, its occurrences by cascade, its held candidates). A memory
        that keeps other sources and whose definition came from this document takes the best remaining
        occurrence's definition instead. Returns the occurrences removed."""
        items = one(
            conn.execute(
                "SELECT count(*) AS n FROM memory_items WHERE tenant_id = %s AND document_id = %s",
                [tenant_id, document_id],
            ).fetchone()
        )["n"]
        if shared:
            conn.execute(
                """UPDATE memories m SET definition = best.definition, updated_at = now()
                   FROM (
                       SELECT DISTINCT ON (o.memory_id) o.memory_id, o.definition
                       FROM memory_items o
                       WHERE o.tenant_id = %(tenant)s AND o.memory_id = ANY(%(ids)s)
                         AND o.document_id IS DISTINCT FROM %(doc)s
                       ORDER BY o.memory_id, o.importance DESC, length(o.definition) DESC
                   ) best
                   WHERE m.tenant_id = %(tenant)s AND m.id = best.memory_id
                     AND EXISTS (SELECT 1 FROM memory_items d
                                 WHERE d.tenant_id = m.tenant_id AND d.memory_id = m.id AND d.document_id = %(doc)s
                                   AND d.definition = m.definition)""",
                {"tenant": tenant_id, "ids": list(shared), "doc": document_id},
            )
        conn.execute(
            "DELETE FROM review_queue WHERE tenant_id = %s AND document_id = %s AND status = 'pending'",
            [tenant_id, document_id],
        )
        conn.execute("DELETE FROM documents WHERE tenant_id = %s AND id = %s", [tenant_id, document_id])
        return int(items)
