"""The one unit of work (``contextos.ports.unit_of_work``): a tenant transaction whose aggregates a
service changes together, committed when its block ends (rolled back when it raises)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from uuid import UUID

from contextos.ports.unit_of_work import ColdMember
from contextos.store.db import Conn, Database
from contextos.store.dialect import Dialect
from contextos.store.erasure import TenantErasure
from contextos.store.locks import lock_tenant
from contextos.store.memory_changes import MemoryChanges


class TransactionColdObjects:
    """``contextos.ports.unit_of_work.ColdObjects`` in one open transaction of one tenant."""

    def __init__(self, conn: Conn, tenant_id: str) -> None:
        self.conn, self.tenant_id = conn, tenant_id

    def lock_members_sharing(self, memory_ids: Sequence[UUID]) -> list[ColdMember]:
        rows = self.conn.execute(
            """SELECT id, cold_object_key, cold_byte_start, cold_byte_end FROM memories
               WHERE tenant_id = %(tenant)s AND tier = 'cold' AND cold_object_key IN (
                   SELECT cold_object_key FROM memories
                   WHERE tenant_id = %(tenant)s AND id = ANY(%(ids)s) AND tier = 'cold'
                     AND cold_object_key IS NOT NULL)
               ORDER BY cold_object_key, cold_byte_start
               FOR UPDATE""",
            {"tenant": self.tenant_id, "ids": list(memory_ids)},
        ).fetchall()
        return [ColdMember(r["id"], r["cold_object_key"], r["cold_byte_start"], r["cold_byte_end"]) for r in rows]

    def repoint(self, object_key: str, members: Sequence[tuple[UUID, tuple[int, int]]]) -> None:
        self.conn.execute(
            """UPDATE memories AS m SET cold_object_key = %(key)s, cold_byte_start = s.b, cold_byte_end = s.e
               FROM unnest(%(ids)s::uuid[], %(starts)s::int8[], %(ends)s::int8[]) AS s(id, b, e)
               WHERE m.tenant_id = %(tenant)s AND m.id = s.id""",
            {
                "tenant": self.tenant_id,
                "key": object_key,
                "ids": [i for i, _ in members],
                "starts": [r[0] for _, r in members],
                "ends": [r[1] for _, r in members],
            },
        )


class TenantTransaction:
    """``contextos.ports.unit_of_work.TenantWork``: one open transaction of one tenant."""

    def __init__(self, conn: Conn, tenant_id: str, dialect: Dialect) -> None:
        self.conn, self.tenant_id = conn, tenant_id
        self.memories = MemoryChanges(conn, tenant_id, dialect)
        self.cold = TransactionColdObjects(conn, tenant_id)
        self.erasure = TenantErasure(conn, tenant_id, dialect)

    def lock_tenant(self) -> int:
        return lock_tenant(self.conn, self.tenant_id)


class UnitOfWorkStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    @contextmanager
    def tenant(self, tenant_id: str) -> Iterator[TenantTransaction]:
        with self.db.tenant_tx(tenant_id) as conn:
            yield TenantTransaction(conn, tenant_id, self.db.dialect)
