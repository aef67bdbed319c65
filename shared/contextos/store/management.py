"""The management reads (S11): memory and document pages (keyset cursors), and the graph around a
memory (``contextos.store.graph``). Every statement is tenant-scoped and set-based; the changes
(edit, forget, restore, forget a document) are ``contextos.store.memory_changes``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings
from contextos.cursors import read_time_id_cursor, time_id_cursor
from contextos.management_models import DocumentListQuery, MemoryListQuery
from contextos.ports.rows import DocumentListRow, MemoryListRow, rows_of
from contextos.store.db import Database
from contextos.store.graph import GraphReads
from contextos.store.scopes import scope_params, scope_predicate
from contextos.store.sql import band_case, current_strength

LIST_COLUMNS = """m.id, m.label, m.definition, m.type, m.importance, m.tier, m.state, m.provenance, m.always_load,
    m.protected, m.user_id, m.agent_id, m.run_id, m.tags, m.metadata, m.version, m.created_at, m.updated_at,
    m.superseded_by, m.forgotten_at"""

# The columns an edit may set, and the ones a revision keeps.
EDITABLE = ("label", "definition", "importance", "type", "tags", "metadata", "always_load", "protected")
SCOPE_FIELDS = ("user_id", "agent_id", "run_id")
WRITABLE = (*EDITABLE, *SCOPE_FIELDS, "expires_at")  # a workspace file also carries a scratch memory's expiry


def encode_cursor(at: datetime, row_id: UUID) -> str:
    return time_id_cursor(at, row_id)


def decode_cursor(cursor: str | None) -> tuple[datetime, UUID] | None:
    return read_time_id_cursor(cursor)


class ManagementStore(GraphReads):
    def __init__(self, db: Database, decay: DecaySettings) -> None:
        self.db = db
        self.decay = decay

    # -- listing ---------------------------------------------------------------------------
    def list_memories(self, tenant_id: str, query: MemoryListQuery) -> tuple[list[MemoryListRow], str | None]:
        """One keyset page, newest first; a forgotten memory is listed only when ``state`` asks for them."""
        strength = current_strength("m")
        forgotten = query.state == "forgotten"  # only asked for: restorable, never in another read
        where = [
            "m.tenant_id = %(tenant)s",
            "m.forgotten_at IS NOT NULL" if forgotten else "m.forgotten_at IS NULL",
            scope_predicate("m", query, self.db.dialect, enumerates=True),
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
