"""Conversation structure as graph signal (S6.3, S8): turns of one session are neighbours.

A turn stored as its own memory is linked to the session's previous turn by a ``related`` edge of
its own small weight, so the graph walk that starts at a hit reaches the turns said right before
and after it ahead of the rest of the session (which the walk reaches anyway, by the shared-session
implicit edge). One set-based statement per write, inside the write's transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID


def link_session_neighbours(
    conn: Any, tenant_id: str, session_id: str, ids: Sequence[UUID], seqs: Sequence[int | None], weight: float
) -> None:
    """Each new turn (``ids`` at message ``seqs``) to the session's turn just before it, whether that
    one came in this write or an earlier one (its occurrences must already be written)."""
    pairs = [(i, s) for i, s in zip(ids, seqs, strict=True) if s is not None]
    if weight <= 0 or not pairs:
        return
    conn.execute(
        """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
           SELECT %(tenant)s, prev.memory_id, cur.id, 'related', %(weight)s
           FROM unnest(%(ids)s::uuid[], %(seqs)s::int[]) AS cur(id, seq)
           CROSS JOIN LATERAL (
               SELECT i.memory_id FROM memory_items i
               WHERE i.tenant_id = %(tenant)s AND i.session_id = %(session)s
                 AND i.message_from < cur.seq AND i.memory_id <> cur.id
               ORDER BY i.message_from DESC
               LIMIT 1
           ) prev
           ON CONFLICT DO NOTHING""",
        {
            "tenant": tenant_id,
            "session": session_id,
            "weight": weight,
            "ids": [i for i, _ in pairs],
            "seqs": [s for _, s in pairs],
        },
    )
