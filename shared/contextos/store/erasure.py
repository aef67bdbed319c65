"""Erasure (S3): every row that holds a user scope's or a tenant's content, deleted set-wise in
one transaction, with a hash-only tombstone per erased row appended to the audit chain.

The audit log is append-only (and hash-chained), so erasure never edits it: each erased row gets
one ``erased`` entry whose details are the table and sha256(table, tenant, row key) — proof that
a row went, nothing of what it held. Earlier audit entries carry ids, counts and reasons, no
memory or document text. The S3 objects the erased rows named are returned for the service to
delete after the commit (as forgetting does).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from contextos.ports.unit_of_work import ErasedRows
from contextos.store.bands import delete_bands
from contextos.store.db import Conn
from contextos.store.dialect import Dialect
from contextos.store.locks import lock_tenant

# Tables whose every row of a tenant goes with it (and no other table holds its content). The
# memories' vectors, items, edges, reminders, revisions, subject terms and communities cascade.
TENANT_TABLES = (
    "memory_vector_bands",
    "memories",
    "documents",
    "sessions",
    "review_queue",
    "context_log",
    "governance_reports",
    "text_common_lexemes",
    "text_lexeme_stats",
    "text_tenant_stats",
    "upload_tickets",
)

# One tombstone per erased row: the row's table and a hash of its key, never its content.
_TOMBSTONES_SQL = """
    INSERT INTO audit_log (tenant_id, actor, action, details)
    SELECT %(tenant)s, %(actor)s, 'erased',
           jsonb_build_object('table', t.tbl, 'row_sha256',
                              encode(sha256(convert_to(t.tbl || ':' || %(tenant)s || ':' || t.k, 'UTF8')), 'hex'))
    FROM (
        SELECT 'memories' AS tbl, id::text AS k FROM memories WHERE tenant_id = %(tenant)s AND id = ANY(%(memories)s)
        UNION ALL
        SELECT 'memory_items', id::text FROM memory_items
        WHERE tenant_id = %(tenant)s AND (memory_id = ANY(%(memories)s) OR id = ANY(%(items)s))
        UNION ALL
        SELECT 'documents', id::text FROM documents WHERE tenant_id = %(tenant)s AND id = ANY(%(documents)s)
        UNION ALL
        SELECT 'sessions', id FROM sessions WHERE tenant_id = %(tenant)s AND id = ANY(%(sessions)s)
        UNION ALL
        SELECT 'messages', session_id || '#' || seq FROM messages
        WHERE tenant_id = %(tenant)s AND session_id = ANY(%(sessions)s)
        UNION ALL
        SELECT 'review_queue', id::text FROM review_queue WHERE tenant_id = %(tenant)s AND id = ANY(%(reviews)s)
    ) t
"""


def scope_hash(tenant_id: str, user_id: str) -> str:
    """What the audit says about an erased user scope: not the user id itself (it may be an email)."""
    return hashlib.sha256(f"user:{tenant_id}:{user_id}".encode()).hexdigest()


class TenantErasure:
    """``contextos.ports.unit_of_work.Erasures`` in one open transaction of one tenant."""

    def __init__(self, conn: Conn, tenant_id: str, dialect: Dialect) -> None:
        self.conn, self.tenant_id, self.dialect = conn, tenant_id, dialect

    # -- a user scope ----------------------------------------------------------------------------
    def user_rows(self, user_id: str) -> dict[str, list[Any]]:
        """The ids of everything of ``user_id``: its documents and sessions, the memories that are its
        or that only its documents and sessions taught, the occurrences it gave other memories, and
        the held candidates from its sources."""
        conn, tenant_id = self.conn, self.tenant_id
        lock_tenant(conn, tenant_id)
        row = conn.execute(
            """WITH d AS (SELECT id FROM documents WHERE tenant_id = %(t)s AND user_id = %(u)s),
                    s AS (SELECT id FROM sessions WHERE tenant_id = %(t)s AND user_id = %(u)s),
                    its_items AS (
                        SELECT i.id, i.memory_id FROM memory_items i
                        WHERE i.tenant_id = %(t)s
                          AND (i.document_id IN (SELECT id FROM d) OR i.session_id IN (SELECT id FROM s))),
                    m AS (
                        SELECT id FROM memories WHERE tenant_id = %(t)s AND user_id = %(u)s
                        UNION
                        SELECT x.memory_id FROM its_items x
                        WHERE NOT EXISTS (SELECT 1 FROM memory_items o
                                          WHERE o.tenant_id = %(t)s AND o.memory_id = x.memory_id
                                            AND o.id NOT IN (SELECT id FROM its_items)))
               SELECT ARRAY(SELECT id FROM d) AS documents, ARRAY(SELECT id FROM s) AS sessions,
                      ARRAY(SELECT id FROM m) AS memories,
                      ARRAY(SELECT x.id FROM its_items x WHERE x.memory_id NOT IN (SELECT id FROM m)) AS items,
                      ARRAY(SELECT DISTINCT x.memory_id FROM its_items x
                            WHERE x.memory_id NOT IN (SELECT id FROM m)) AS shared,
                      ARRAY(SELECT r.id FROM review_queue r WHERE r.tenant_id = %(t)s
                            AND (r.document_id IN (SELECT id FROM d) OR r.session_id IN (SELECT id FROM s)
                                 OR r.candidate -> 'scope' ->> 'user_id' = %(u)s)) AS reviews,
                      ARRAY(SELECT id FROM memories WHERE tenant_id = %(t)s AND tier = 'cold'
                            AND id IN (SELECT id FROM m)) AS cold""",
            {"t": tenant_id, "u": user_id},
        ).fetchone()
        return dict(row) if row else {}

    def erase_user(self, user_id: str, ids: dict[str, list[Any]], *, actor: str) -> ErasedRows:
        """Delete what `user_rows` found (its cold members already taken out of their objects)."""
        conn, tenant_id = self.conn, self.tenant_id
        out = ErasedRows()
        t = tenant_id
        params = {
            "tenant": t,
            "actor": actor,
            "memories": ids["memories"],
            "items": ids["items"],
            "documents": ids["documents"],
            "sessions": ids["sessions"],
            "reviews": ids["reviews"],
        }
        conn.execute(_TOMBSTONES_SQL, params)
        out.objects = _document_objects(conn, t, ids["documents"])
        # A memory that keeps other sources loses the definition this user's source gave it.
        if ids["shared"]:
            conn.execute(
                """UPDATE memories m SET definition = best.definition, source_text = NULL, updated_at = now()
                   FROM (SELECT DISTINCT ON (o.memory_id) o.memory_id, o.definition FROM memory_items o
                         WHERE o.tenant_id = %(t)s AND o.memory_id = ANY(%(shared)s) AND NOT (o.id = ANY(%(items)s))
                         ORDER BY o.memory_id, o.importance DESC, length(o.definition) DESC) best
                   WHERE m.tenant_id = %(t)s AND m.id = best.memory_id""",
                {"t": t, "shared": ids["shared"], "items": ids["items"]},
            )
            conn.execute(
                "DELETE FROM memory_revisions WHERE tenant_id = %s AND memory_id = ANY(%s)", [t, ids["shared"]]
            )
        out.counts["memory_items"] = conn.execute(
            "DELETE FROM memory_items WHERE tenant_id = %s AND id = ANY(%s)", [t, ids["items"]]
        ).rowcount
        out.counts["memories"] = self._delete_memories(conn, t, ids["memories"])
        out.counts["review_queue"] = conn.execute(
            "DELETE FROM review_queue WHERE tenant_id = %s AND id = ANY(%s)", [t, ids["reviews"]]
        ).rowcount
        out.counts["context_log"] = conn.execute(
            """DELETE FROM context_log WHERE tenant_id = %s AND (session_id = ANY(%s) OR memory_ids && %s::uuid[])""",
            [t, ids["sessions"], ids["memories"]],
        ).rowcount
        out.counts["documents"] = conn.execute(
            "DELETE FROM documents WHERE tenant_id = %s AND id = ANY(%s)", [t, ids["documents"]]
        ).rowcount
        out.counts["sessions"] = conn.execute(
            "DELETE FROM sessions WHERE tenant_id = %s AND id = ANY(%s)", [t, ids["sessions"]]
        ).rowcount
        out.counts["upload_tickets"] = conn.execute(
            "DELETE FROM upload_tickets WHERE tenant_id = %s AND (user_id = %s OR document_id = ANY(%s))",
            [t, user_id, ids["documents"]],
        ).rowcount
        # Reports and text statistics name or count the erased text: dropped, recomputed by their jobs.
        for table in ("governance_reports", "text_common_lexemes", "text_lexeme_stats", "text_tenant_stats"):
            conn.execute(f"DELETE FROM {table} WHERE tenant_id = %s", [t])
        conn.execute(
            """INSERT INTO audit_log (tenant_id, actor, action, details)
               VALUES (%s, %s, 'user_scope_erased', %s::jsonb)""",
            [t, actor, _json({"scope_sha256": scope_hash(t, user_id), "counts": out.counts})],
        )
        return out

    # -- a whole tenant ----------------------------------------------------------------------------
    def erase_tenant(self, *, actor: str) -> ErasedRows:
        """Every row of the tenant in every table but the audit chain (which gains the tombstones),
        its keys too. Its objects go by prefix (`ErasureService`)."""
        conn, t = self.conn, self.tenant_id
        out = ErasedRows()
        lock_tenant(conn, t)
        everything = conn.execute(
            """SELECT ARRAY(SELECT id FROM memories WHERE tenant_id = %(t)s) AS memories,
                      ARRAY(SELECT id FROM documents WHERE tenant_id = %(t)s) AS documents,
                      ARRAY(SELECT id FROM sessions WHERE tenant_id = %(t)s) AS sessions,
                      ARRAY(SELECT id FROM review_queue WHERE tenant_id = %(t)s) AS reviews,
                      ARRAY[]::uuid[] AS items""",
            {"t": t},
        ).fetchone()
        assert everything is not None
        conn.execute(_TOMBSTONES_SQL, {"tenant": t, "actor": actor, **dict(everything)})
        for table in TENANT_TABLES:
            out.counts[table] = conn.execute(
                f"DELETE FROM {table} WHERE tenant_id = %s",
                [t],
            ).rowcount
        out.counts["api_keys"] = conn.execute("DELETE FROM api_keys WHERE tenant_id = %s", [t]).rowcount
        conn.execute("UPDATE tenants SET hot_memories = 0 WHERE tenant_id = %s", [t])  # settings hold no content
        conn.execute(
            "INSERT INTO audit_log (tenant_id, actor, action, details) VALUES (%s, %s, 'tenant_erased', %s::jsonb)",
            [t, actor, _json({"counts": out.counts})],
        )
        return out

    def _delete_memories(self, conn: Conn, tenant_id: str, ids: Sequence[UUID]) -> int:
        if not ids:
            return 0
        delete_bands(conn, self.dialect, tenant_id, ids)
        active = conn.execute(
            """SELECT count(*) AS n FROM memories
               WHERE tenant_id = %s AND id = ANY(%s) AND state = 'active' AND tier = 'hot'""",
            [tenant_id, list(ids)],
        ).fetchone()
        n = conn.execute("DELETE FROM memories WHERE tenant_id = %s AND id = ANY(%s)", [tenant_id, list(ids)]).rowcount
        if active and active["n"]:
            conn.execute(
                "UPDATE tenants SET hot_memories = GREATEST(hot_memories - %s, 0) WHERE tenant_id = %s",
                [active["n"], tenant_id],
            )
        return n


def _document_objects(conn: Conn, tenant_id: str, documents: Sequence[UUID]) -> list[tuple[str, str]]:
    rows = conn.execute(
        """SELECT raw_s3_key, source_s3_key, upload_s3_key FROM documents
           WHERE tenant_id = %s AND id = ANY(%s)""",
        [tenant_id, list(documents)],
    ).fetchall()
    out: list[tuple[str, str]] = []
    for r in rows:
        out += [("raw", k) for k in (r["raw_s3_key"], r["source_s3_key"]) if k]
        if r["upload_s3_key"]:
            out.append(("upload", r["upload_s3_key"]))
    return out


def _json(value: dict) -> str:
    return json.dumps(value, sort_keys=True)
