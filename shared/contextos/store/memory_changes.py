"""Changes to one memory or one document inside a tenant transaction (S11): edit, forget, restore,
delete, forget a document. The unit of work (``contextos.store.unit_of_work``) binds them to its
transaction; the admission store applies a workspace file's edit through the same ``apply_edit``.

Forgetting (``forget_hot``) leaves a memory's row in place with state ``archived`` and
``forgotten_at`` set: no read of the present or the past admits an archived row, and while the row
is hot it still holds what a restore needs. A cold memory's content lives only in its cold object,
so forgetting it removes it there (``contextos.services.forgetting``) and deletes the row.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast
from uuid import UUID

import numpy as np
from contextos.errors import NotFound
from contextos.lsh import sketch
from contextos.ports.rows import LockedDocument, LockedMemory
from contextos.store.audit import write_audit
from contextos.store.bands import delete_bands, insert_bands, keys_literal
from contextos.store.db import Conn, one
from contextos.store.dialect import Dialect
from pgvector import Vector
from psycopg.types.json import Jsonb

# The columns an edit may set (a workspace file also carries a scratch memory's expiry).
WRITABLE = (
    "label",
    "definition",
    "importance",
    "type",
    "tags",
    "metadata",
    "always_load",
    "protected",
    "user_id",
    "agent_id",
    "run_id",
    "expires_at",
)


class MemoryChanges:
    """``contextos.ports.unit_of_work.MemoryChanges`` in one open transaction of one tenant."""

    def __init__(self, conn: Conn, tenant_id: str, dialect: Dialect) -> None:
        self.conn, self.tenant_id, self.dialect = conn, tenant_id, dialect

    # -- reading one for a change ------------------------------------------------------------
    def lock(self, memory_id: UUID) -> LockedMemory:
        """The memory's row (and its vector), locked for this transaction; 404 when it is not there."""
        row = self.conn.execute(
            """SELECT m.id, m.norm_key, m.label, m.definition, m.type, m.importance, m.tags, m.metadata,
                      m.always_load, m.protected, m.user_id, m.agent_id, m.run_id, m.state, m.tier, m.version,
                      m.superseded_by, m.forgotten_at, m.forgotten_state, m.cold_object_key,
                      v.embedding, v.band_keys, v.embedder_id
               FROM memories m LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
               WHERE m.tenant_id = %s AND m.id = %s
               FOR UPDATE OF m""",
            [self.tenant_id, memory_id],
        ).fetchone()
        if not row:
            raise NotFound(f"memory {memory_id} not found")
        return cast(LockedMemory, row)

    def key_taken(self, norm_key: str, memory_id: UUID) -> bool:
        return self.active_keys([norm_key], besides=memory_id).get(norm_key) is not None

    def active_keys(self, keys: Sequence[str], *, besides: UUID | None = None) -> dict[str, UUID]:
        """The active memories (other than ``besides``) holding these keys, by key."""
        if not keys:
            return {}
        rows = self.conn.execute(
            """SELECT norm_key, id FROM memories
               WHERE tenant_id = %s AND state = 'active' AND norm_key = ANY(%s::text[])
                 AND id IS DISTINCT FROM %s""",
            [self.tenant_id, list(keys), besides],
        ).fetchall()
        return {r["norm_key"]: r["id"] for r in rows}

    # -- editing -----------------------------------------------------------------------------
    def apply_edit(
        self,
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
        self._keep_revision(row, actor)
        sets = [f"{field} = %({field})s" for field in WRITABLE if field in changes]
        params: dict[str, Any] = {f: changes[f] for f in WRITABLE if f in changes}
        if "metadata" in params:
            params["metadata"] = Jsonb(params["metadata"])
        sets += ["norm_key = %(norm_key)s", "initials = %(initials)s", "acronyms = %(acronyms)s"]
        params |= {"norm_key": norm_key, "initials": initials, "acronyms": list(acronyms)}
        version = one(
            self.conn.execute(
                f"""UPDATE memories SET {", ".join(sets)}, version = version + 1, updated_at = now()
                    WHERE tenant_id = %(tenant)s AND id = %(id)s RETURNING version""",
                params | {"tenant": self.tenant_id, "id": row["id"]},
            ).fetchone()
        )["version"]
        memory_type = changes.get("type", row["type"])
        if embedding is not None and row["embedding"] is not None:
            self._replace_vector(row["id"], embedding, embedder_id, memory_type)
        elif "type" in changes:
            self.conn.execute(
                "UPDATE memory_vectors SET type = %s WHERE tenant_id = %s AND memory_id = %s",
                [memory_type, self.tenant_id, row["id"]],
            )
        details = {"fields": sorted(changes), "version": version, "reembedded": embedding is not None}
        self.audit([{"actor": actor, "action": "edited", "memory_id": row["id"], "reason": reason, "details": details}])
        return int(version)

    def _keep_revision(self, row: LockedMemory, actor: str) -> None:
        self.conn.execute(
            """INSERT INTO memory_revisions (tenant_id, memory_id, version, label, definition, type, importance,
                   tags, metadata, always_load, protected, actor)
               VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
               ON CONFLICT (tenant_id, memory_id, version) DO NOTHING""",
            [
                self.tenant_id,
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

    def _replace_vector(self, memory_id: UUID, embedding: Sequence[float], embedder_id: str, memory_type: str) -> None:
        """The edited text's vector, back in the fresh segment, with its LSH bands."""
        lsh = sketch(np.asarray([embedding], dtype=np.float32))
        delete_bands(self.conn, self.dialect, self.tenant_id, [memory_id])
        self.conn.execute(
            """UPDATE memory_vectors SET embedding = %s, embedder_id = %s, type = %s, band_keys = %s::int[],
                      indexed = false, updated_at = now()
               WHERE tenant_id = %s AND memory_id = %s""",
            [
                Vector(list(embedding)),
                embedder_id,
                memory_type,
                keys_literal(lsh.band_keys[0]),
                self.tenant_id,
                memory_id,
            ],
        )
        insert_bands(self.conn, self.tenant_id, [memory_id], lsh.signatures, lsh.band_keys, fresh=False)

    # -- forgetting and restoring -------------------------------------------------------------
    def taught_only_by(self, memory_id: UUID, actor: str) -> bool:
        """Whether every admission of (or merge into) this memory was ``actor``'s."""
        row = self.conn.execute(
            """SELECT count(*) > 0 AND bool_and(actor = %s) AS own FROM audit_log
               WHERE tenant_id = %s AND memory_id = %s AND action IN ('admitted', 'merged')""",
            [actor, self.tenant_id, memory_id],
        ).fetchone()
        return bool(row and row["own"])

    def forget_hot(self, row: LockedMemory, *, actor: str, reason: str | None) -> None:
        """Out of every read, restorable: archived state, unsearchable vector, no LSH bands."""
        delete_bands(self.conn, self.dialect, self.tenant_id, [row["id"]])
        self.conn.execute(
            """UPDATE memories SET forgotten_state = state, state = 'archived', forgotten_at = now(),
                      next_transition_at = NULL, updated_at = now()
               WHERE tenant_id = %s AND id = %s""",
            [self.tenant_id, row["id"]],
        )
        self.conn.execute(
            "UPDATE memory_vectors SET searchable = false WHERE tenant_id = %s AND memory_id = %s",
            [self.tenant_id, row["id"]],
        )
        if row["state"] == "active" and row["tier"] == "hot":
            self.conn.execute(
                "UPDATE tenants SET hot_memories = GREATEST(hot_memories - 1, 0) WHERE tenant_id = %s", [self.tenant_id]
            )
        self.audit([{"actor": actor, "action": "deleted", "memory_id": row["id"], "reason": reason}])

    def restore(self, row: LockedMemory, *, state: str, norm_key: str, actor: str, undo: str) -> None:
        """Back to ``state`` under ``norm_key``: searchable again when active, bands rebuilt, audited."""
        self.conn.execute(
            """UPDATE memories SET state = %(state)s, norm_key = %(key)s, forgotten_at = NULL, forgotten_state = NULL,
                      superseded_by = CASE WHEN %(undo)s = 'supersession' THEN NULL ELSE superseded_by END,
                      superseded_at = CASE WHEN %(undo)s = 'supersession' THEN NULL ELSE superseded_at END,
                      valid_to = CASE WHEN %(undo)s = 'supersession' THEN NULL ELSE valid_to END,
                      updated_at = now()
               WHERE tenant_id = %(tenant)s AND id = %(id)s""",
            {"state": state, "key": norm_key, "undo": undo, "tenant": self.tenant_id, "id": row["id"]},
        )
        if undo == "supersession" and row["superseded_by"]:
            self.conn.execute(
                """DELETE FROM relationships
                   WHERE tenant_id = %s AND src_id = %s AND dst_id = %s AND type = 'supersedes'""",
                [self.tenant_id, row["superseded_by"], row["id"]],
            )
        active = state == "active" and row["tier"] == "hot"
        if row["embedding"] is not None:
            self.conn.execute(
                "UPDATE memory_vectors SET searchable = %s, indexed = false WHERE tenant_id = %s AND memory_id = %s",
                [active, self.tenant_id, row["id"]],
            )
            if undo == "forget":
                lsh = sketch(np.asarray([row["embedding"].to_list()], dtype=np.float32))
                insert_bands(self.conn, self.tenant_id, [row["id"]], lsh.signatures, lsh.band_keys, fresh=False)
        if active:
            self.conn.execute(
                "UPDATE tenants SET hot_memories = hot_memories + 1 WHERE tenant_id = %s", [self.tenant_id]
            )
        details = {"undo": undo} | ({"successor": str(row["superseded_by"])} if row["superseded_by"] else {})
        self.audit([{"actor": actor, "action": "restored", "memory_id": row["id"], "details": details}])

    def supersede_by_restored(self, newer: LockedMemory, *, by: UUID, actor: str) -> None:
        self.conn.execute(
            """UPDATE memories SET state = 'superseded', superseded_by = %(by)s, superseded_at = now(),
                      valid_to = now(), updated_by = NULL, updated_at = now()
               WHERE tenant_id = %(tenant)s AND id = %(id)s""",
            {"by": by, "tenant": self.tenant_id, "id": newer["id"]},
        )
        self.conn.execute(
            "UPDATE memory_vectors SET searchable = false WHERE tenant_id = %s AND memory_id = %s",
            [self.tenant_id, newer["id"]],
        )
        self.conn.execute(
            "UPDATE tenants SET hot_memories = GREATEST(hot_memories - 1, 0) WHERE tenant_id = %s", [self.tenant_id]
        )
        self._edge(by, newer["id"], "supersedes")
        self.audit(
            [
                {
                    "actor": actor,
                    "action": "superseded",
                    "memory_id": newer["id"],
                    "reason": "an older version was restored as current",
                    "details": {"by": str(by)},
                }
            ]
        )

    def link_conflict(self, *, newer: UUID, older: UUID, actor: str) -> None:
        self.conn.execute(
            "UPDATE memories SET updated_by = %s WHERE tenant_id = %s AND id = %s", [newer, self.tenant_id, older]
        )
        self._edge(newer, older, "contradicts")
        self.audit(
            [
                {
                    "actor": actor,
                    "action": "update_linked",
                    "memory_id": older,
                    "reason": "restored beside its newer version: both hold",
                    "details": {"by": str(newer)},
                }
            ]
        )

    def _edge(self, src: UUID, dst: UUID, kind: str) -> None:
        self.conn.execute(
            """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight) VALUES (%s, %s, %s, %s, 1.0)
               ON CONFLICT (tenant_id, src_id, dst_id, type) DO UPDATE SET updated_at = now()""",
            [self.tenant_id, src, dst, kind],
        )

    def delete(self, ids: Sequence[UUID], *, actor: str, reason: str) -> None:
        """Remove memories outright (their vectors, bands, items, edges and revisions with them)."""
        if not ids:
            return
        delete_bands(self.conn, self.dialect, self.tenant_id, ids)
        active = one(
            self.conn.execute(
                """SELECT count(*) AS n FROM memories
                   WHERE tenant_id = %s AND id = ANY(%s) AND state = 'active' AND tier = 'hot'""",
                [self.tenant_id, list(ids)],
            ).fetchone()
        )["n"]
        self.conn.execute("DELETE FROM memories WHERE tenant_id = %s AND id = ANY(%s)", [self.tenant_id, list(ids)])
        if active:
            self.conn.execute(
                "UPDATE tenants SET hot_memories = GREATEST(hot_memories - %s, 0) WHERE tenant_id = %s",
                [active, self.tenant_id],
            )
        self.audit([{"actor": actor, "action": "deleted", "memory_id": i, "reason": reason} for i in ids])

    # -- documents ---------------------------------------------------------------------------
    def lock_document(self, document_id: UUID) -> LockedDocument:
        row = self.conn.execute(
            """SELECT id, status, raw_s3_key, source_s3_key, upload_s3_key FROM documents
               WHERE tenant_id = %s AND id = %s FOR UPDATE""",
            [self.tenant_id, document_id],
        ).fetchone()
        if not row:
            raise NotFound(f"document {document_id} not found")
        return cast(LockedDocument, row)

    def document_memories(self, document_id: UUID) -> dict[str, list[UUID]]:
        """The hot memories a document taught: ``sole`` (no other source) and ``shared``; and the cold
        ones its admissions touched (their occurrences live in their cold objects)."""
        rows = self.conn.execute(
            """SELECT i.memory_id,
                      bool_and(EXISTS (
                          SELECT 1 FROM memory_items o
                          WHERE o.tenant_id = i.tenant_id AND o.memory_id = i.memory_id
                            AND (o.document_id IS DISTINCT FROM i.document_id OR o.session_id IS NOT NULL)
                      )) AS shared
               FROM memory_items i
               WHERE i.tenant_id = %s AND i.document_id = %s
               GROUP BY i.memory_id""",
            [self.tenant_id, document_id],
        ).fetchall()
        cold = self.conn.execute(
            """SELECT DISTINCT m.id FROM audit_log a
               JOIN memories m ON m.tenant_id = a.tenant_id AND m.id = a.memory_id
               WHERE a.tenant_id = %s AND a.details->>'document_id' = %s AND m.tier = 'cold'""",
            [self.tenant_id, str(document_id)],
        ).fetchall()
        return {
            "sole": [r["memory_id"] for r in rows if not r["shared"]],
            "shared": [r["memory_id"] for r in rows if r["shared"]],
            "cold": [r["id"] for r in cold],
        }

    def delete_document(self, document_id: UUID, shared: Sequence[UUID]) -> int:
        """Delete the document (its raw text, its occurrences by cascade, its held candidates). A memory
        that keeps other sources and whose definition came from this document takes the best remaining
        occurrence's definition instead. Returns the occurrences removed."""
        items = one(
            self.conn.execute(
                "SELECT count(*) AS n FROM memory_items WHERE tenant_id = %s AND document_id = %s",
                [self.tenant_id, document_id],
            ).fetchone()
        )["n"]
        if shared:
            self.conn.execute(
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
                {"tenant": self.tenant_id, "ids": list(shared), "doc": document_id},
            )
        self.conn.execute(
            "DELETE FROM review_queue WHERE tenant_id = %s AND document_id = %s AND status = 'pending'",
            [self.tenant_id, document_id],
        )
        self.conn.execute("DELETE FROM documents WHERE tenant_id = %s AND id = %s", [self.tenant_id, document_id])
        return int(items)

    def audit(self, entries: Sequence[dict[str, Any]]) -> None:
        write_audit(self.conn, self.tenant_id, entries)
