"""Write statements whose results nobody reads, sent to PostgreSQL as one statement.

The end of an admission is a run of independent writes (vectors, band rows, items, edges, the
tenant's count, audit rows). Each statement costs a parse/bind/execute cycle on the server and a
trip through the driver on the client (about 0.15 ms together, measured here), which at 20 concepts
per document is a good share of the store path. On PostgreSQL, consecutive writes become one
statement of data-modifying CTEs: ``WITH w0 AS (INSERT ...), w1 AS (INSERT ...) UPDATE ...``.
Every sub-statement runs to completion whether or not anything refers to it, in the caller's
transaction, under one snapshot - so only writes that do not read each other's rows belong in one
batch (the caller flushes between dependent ones). Other dialects run the statements one by one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from contextos.store.db import Conn

_WRITES = ("INSERT", "UPDATE", "DELETE")


class StatementBatch:
    """Stands in for a connection's ``execute`` for writes; ``flush`` sends what was collected."""

    def __init__(self, conn: Conn, *, combine: bool) -> None:
        self.conn = conn
        self.combine = combine
        self._parts: list[tuple[str, list[Any]]] = []

    def execute(self, sql: str, params: Sequence[Any] | Mapping[str, Any] | None = None) -> None:
        """Collect a write with positional parameters; anything else runs now, after what came before."""
        text = sql.strip()
        if not self.combine or isinstance(params, Mapping) or not text.upper().startswith(_WRITES):
            self.flush()
            self.conn.execute(sql, params)
            return
        self._parts.append((text, list(params or ())))

    def flush(self) -> None:
        parts, self._parts = self._parts, []
        if not parts:
            return
        *heads, (last_sql, _) = parts
        sql = "".join(f"{'WITH' if i == 0 else ','} w{i} AS ({text})\n" for i, (text, _) in enumerate(heads))
        self.conn.execute(sql + last_sql, [p for _, params in parts for p in params])


# What a write-only statement runs on: a connection, or a batch standing in for one.
Writes: TypeAlias = Conn | StatementBatch
