"""Sessions, messages and conversation flushes (S8): tenant-scoped, one statement where it can be.

An append is one statement (session upsert + message insert). A flush moves a session's
``flushed_through`` to its ``message_count`` and records the range in ``conversation_flushes``
in the same transaction, under the session's row lock: whatever triggers race for a range
(an end, the sweeper, two appends crossing the threshold), one of them claims it and the
others find nothing left to claim.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, cast

from contextos.cursors import read_time_session_cursor, time_session_cursor
from contextos.errors import NotFound, SessionEnded
from contextos.ports.rows import (
    AppendedMessage,
    FlushRow,
    HeldFromSessionRow,
    SessionDetail,
    SessionListRow,
    SessionTaught,
    TaughtMemoryRow,
    TurnRow,
    row_of,
    rows_of,
)
from contextos.scopes import Scope
from contextos.store.db import Database
from contextos.store.scopes import set_session_scope
from psycopg.types.json import Jsonb

FLUSH_COLUMNS = "session_id, message_from, message_to, trigger, status, error, counts, attempts"


class ConversationStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    def set_session_scope(self, tenant_id: str, session_id: str, scope: Scope) -> None:
        """A session takes the scope its first scoped turn gives (later turns do not move it)."""
        if scope.empty:
            return
        with self.db.tenant_tx(tenant_id) as conn:
            set_session_scope(conn, tenant_id, session_id, scope)

    # -- chat time -------------------------------------------------------------------------
    def append(
        self,
        tenant_id: str,
        session_id: str,
        *,
        role: str,
        content: str,
        provenance: str,
        occurred_at: datetime | None = None,
    ) -> AppendedMessage:
        """Buffer one message (creating the session on its first); never extracts anything.
        ``occurred_at`` is when it was said, if not now (checked by the caller).

        Returns the message's seq and the session's counters. An ended session refuses it.
        """
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                """WITH tenant AS (
                       INSERT INTO tenants (tenant_id)
                       SELECT %(tenant)s WHERE NOT EXISTS (SELECT 1 FROM tenants WHERE tenant_id = %(tenant)s)
                       ON CONFLICT DO NOTHING
                   ),
                   s AS (
                       INSERT INTO sessions AS s (tenant_id, id, message_count, last_message_at)
                       VALUES (%(tenant)s, %(session)s, 1, now())
                       ON CONFLICT (tenant_id, id) DO UPDATE
                           SET message_count = s.message_count + 1, last_message_at = now()
                           WHERE s.status = 'open'
                       RETURNING s.message_count, s.flushed_through
                   ),
                   m AS (
                       INSERT INTO messages (tenant_id, session_id, seq, role, content, provenance, occurred_at)
                       SELECT %(tenant)s, %(session)s, s.message_count, %(role)s, %(content)s, %(provenance)s,
                              %(occurred_at)s::timestamptz
                       FROM s
                       RETURNING seq
                   )
                   SELECT m.seq, s.message_count, s.flushed_through FROM m, s""",
                {
                    "tenant": tenant_id,
                    "session": session_id,
                    "role": role,
                    "content": content,
                    "provenance": provenance,
                    "occurred_at": occurred_at,
                },
            ).fetchone()
        if row is None:
            raise SessionEnded(f"session {session_id!r} has ended; start a new session")
        return cast(AppendedMessage, row)

    def recent_turns(self, tenant_id: str, session_id: str, limit: int) -> list[TurnRow]:
        """The last ``limit`` messages of a session, oldest first (an index range read)."""
        if limit <= 0:
            return []
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT seq, role, content, provenance, COALESCE(occurred_at, created_at) AS said_at FROM messages
                   WHERE tenant_id = %s AND session_id = %s ORDER BY seq DESC LIMIT %s""",
                [tenant_id, session_id, limit],
            ).fetchall()
        return rows_of(TurnRow, rows[::-1])

    # -- flushing --------------------------------------------------------------------------
    def claim_flush(self, tenant_id: str, session_id: str, trigger: str, *, min_unflushed: int = 1) -> FlushRow | None:
        """Claim the session's unflushed range if it holds at least ``min_unflushed`` messages.

        ``trigger == 'end'`` also ends the session (once; ending twice is harmless). Returns the
        new flush row, or None when there is nothing (left) to claim.
        """
        with self.db.tenant_tx(tenant_id) as conn:
            session = conn.execute(
                """SELECT status, message_count, flushed_through FROM sessions
                   WHERE tenant_id = %s AND id = %s FOR UPDATE""",
                [tenant_id, session_id],
            ).fetchone()
            if session is None:
                raise NotFound(f"session {session_id!r} not found")
            if trigger == "end" and session["status"] == "open":
                conn.execute(
                    "UPDATE sessions SET status = 'ended', ended_at = now() WHERE tenant_id = %s AND id = %s",
                    [tenant_id, session_id],
                )
            unflushed = session["message_count"] - session["flushed_through"]
            if unflushed < max(min_unflushed, 1):
                return None
            conn.execute(
                "UPDATE sessions SET flushed_through = %s WHERE tenant_id = %s AND id = %s",
                [session["message_count"], tenant_id, session_id],
            )
            claimed = conn.execute(
                f"""INSERT INTO conversation_flushes (tenant_id, session_id, message_from, message_to, trigger)
                    VALUES (%s, %s, %s, %s, %s)
                    ON CONFLICT DO NOTHING
                    RETURNING {FLUSH_COLUMNS}""",
                [tenant_id, session_id, session["flushed_through"] + 1, session["message_count"], trigger],
            ).fetchone()
        return row_of(FlushRow, claimed)

    def claim_idle(self, tenant_id: str, *, idle_s: int, limit: int) -> list[FlushRow]:
        """Claim the unflushed range of every open session idle for ``idle_s``: one statement.

        Sessions another transaction holds right now (an end, an append) are skipped: that one
        decides, and a session skipped while active is no longer idle anyway.
        """
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                f"""WITH idle AS (
                        SELECT id, flushed_through, message_count FROM sessions
                        WHERE tenant_id = %(tenant)s AND status = 'open' AND message_count > flushed_through
                          AND last_message_at < now() - %(idle)s::interval
                        ORDER BY last_message_at
                        LIMIT %(limit)s
                        FOR UPDATE SKIP LOCKED
                    ),
                    moved AS (
                        UPDATE sessions AS s SET flushed_through = idle.message_count
                        FROM idle
                        WHERE s.tenant_id = %(tenant)s AND s.id = idle.id
                        RETURNING s.id, idle.flushed_through + 1 AS message_from, idle.message_count AS message_to
                    )
                    INSERT INTO conversation_flushes (tenant_id, session_id, message_from, message_to, trigger)
                    SELECT %(tenant)s, id, message_from, message_to, 'idle' FROM moved
                    ON CONFLICT DO NOTHING
                    RETURNING {FLUSH_COLUMNS}""",
                {"tenant": tenant_id, "idle": timedelta(seconds=idle_s), "limit": limit},
            ).fetchall()
        return rows_of(FlushRow, rows)

    def mark_enqueued(self, tenant_id: str, session_id: str, message_from: int) -> None:
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE conversation_flushes SET status = 'queued', enqueued_at = now(), updated_at = now()
                   WHERE tenant_id = %s AND session_id = %s AND message_from = %s AND status = 'pending'""",
                [tenant_id, session_id, message_from],
            )

    def mark_enqueued_many(self, tenant_id: str, ranges: list[tuple[str, int]]) -> None:
        """Record that (session, first message) ranges were sent now, in one statement."""
        if not ranges:
            return
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE conversation_flushes AS f SET status = 'queued', enqueued_at = now(), updated_at = now()
                   FROM unnest(%s::text[], %s::int[]) AS r(session_id, message_from)
                   WHERE f.tenant_id = %s AND f.session_id = r.session_id AND f.message_from = r.message_from
                     AND f.status IN ('pending', 'queued')""",
                [[r[0] for r in ranges], [r[1] for r in ranges], tenant_id],
            )

    def unsent_flushes(self, tenant_id: str, *, older_than_s: int, requeue_after_s: int, limit: int) -> list[FlushRow]:
        """Claimed flushes whose queue message was never sent (the sender died after the claim), and
        sent ones nobody has touched for ``requeue_after_s`` (their message was lost or dead-lettered)."""
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                f"""SELECT {FLUSH_COLUMNS} FROM conversation_flushes
                    WHERE tenant_id = %s
                      AND ((status = 'pending' AND updated_at < now() - %s::interval)
                           OR (status = 'queued' AND updated_at < now() - %s::interval))
                    ORDER BY updated_at LIMIT %s""",
                [tenant_id, timedelta(seconds=older_than_s), timedelta(seconds=requeue_after_s), limit],
            ).fetchall()
        return rows_of(FlushRow, rows)

    # -- the conversation function ---------------------------------------------------------
    def claim_job(self, tenant_id: str, session_id: str, message_from: int, *, stale_after_s: int) -> FlushRow | None:
        """Take a flush for processing; None when it is done, failed, or held by a live worker."""
        with self.db.tenant_tx(tenant_id) as conn:
            claimed = conn.execute(
                f"""UPDATE conversation_flushes
                    SET status = 'processing', attempts = attempts + 1, updated_at = now()
                    WHERE tenant_id = %s AND session_id = %s AND message_from = %s
                      AND (status IN ('pending', 'queued')
                           OR (status = 'processing' AND updated_at < now() - %s::interval))
                    RETURNING {FLUSH_COLUMNS}""",
                [tenant_id, session_id, message_from, timedelta(seconds=stale_after_s)],
            ).fetchone()
        return row_of(FlushRow, claimed)

    def release_job(self, tenant_id: str, session_id: str, message_from: int, reason: str) -> None:
        """Hand a flush back after a transient failure, for the queue's retry."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE conversation_flushes SET status = 'queued', error = %s, updated_at = now()
                   WHERE tenant_id = %s AND session_id = %s AND message_from = %s AND status = 'processing'""",
                [reason[:1000], tenant_id, session_id, message_from],
            )

    def fail_job(
        self, tenant_id: str, session_id: str, message_from: int, reason: str, counts: dict | None = None
    ) -> None:
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE conversation_flushes SET status = 'failed', error = %s, counts = counts || %s,
                          updated_at = now()
                   WHERE tenant_id = %s AND session_id = %s AND message_from = %s AND status <> 'done'""",
                [reason[:1000], Jsonb(counts or {}), tenant_id, session_id, message_from],
            )

    def turns(self, tenant_id: str, session_id: str, message_from: int, message_to: int) -> list[TurnRow]:
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT seq, role, content, provenance, COALESCE(occurred_at, created_at) AS said_at FROM messages
                   WHERE tenant_id = %s AND session_id = %s AND seq BETWEEN %s AND %s ORDER BY seq""",
                [tenant_id, session_id, message_from, message_to],
            ).fetchall()
        return rows_of(TurnRow, rows)

    # -- reading ---------------------------------------------------------------------------
    def get_session(self, tenant_id: str, session_id: str) -> SessionDetail:
        with self.db.tenant_tx(tenant_id) as conn:
            session = conn.execute(
                """SELECT id, status, message_count, flushed_through, last_message_at, ended_at, created_at
                   FROM sessions WHERE tenant_id = %s AND id = %s""",
                [tenant_id, session_id],
            ).fetchone()
            if session is None:
                raise NotFound(f"session {session_id!r} not found")
            flushes = conn.execute(
                f"""SELECT {FLUSH_COLUMNS} FROM conversation_flushes
                    WHERE tenant_id = %s AND session_id = %s ORDER BY message_from""",
                [tenant_id, session_id],
            ).fetchall()
        return SessionDetail(**session, flushes=rows_of(FlushRow, flushes))  # type: ignore[typeddict-item]

    def taught(self, tenant_id: str, session_id: str) -> SessionTaught:
        """What a session's flushes made of it: each memory one of its turns fed (created by the
        flush when its creation time is the item's, as the admission's upsert tells a new row), with
        what it superseded; and the candidates its flushes held for review."""
        with self.db.tenant_tx(tenant_id) as conn:
            found = conn.execute("SELECT 1 FROM sessions WHERE tenant_id = %s AND id = %s", [tenant_id, session_id])
            if found.fetchone() is None:
                raise NotFound(f"session {session_id!r} not found")
            memories = conn.execute(
                """SELECT m.id, m.label, m.type, m.state,
                          CASE WHEN bool_or(m.created_at = i.created_at) THEN 'admitted' ELSE 'merged' END AS outcome,
                          min(i.message_from) AS message_from, max(i.message_to) AS message_to,
                          COALESCE((SELECT array_agg(r.dst_id ORDER BY r.dst_id) FROM relationships r
                                    WHERE r.tenant_id = m.tenant_id AND r.src_id = m.id AND r.type = 'supersedes'),
                                   '{}') AS superseded
                   FROM memory_items i JOIN memories m ON m.tenant_id = i.tenant_id AND m.id = i.memory_id
                   WHERE i.tenant_id = %s AND i.session_id = %s AND m.forgotten_at IS NULL
                   GROUP BY m.tenant_id, m.id ORDER BY min(i.created_at), m.label""",
                [tenant_id, session_id],
            ).fetchall()
            held = conn.execute(
                """SELECT id AS review_id, candidate->>'label' AS label, reason, trust, status FROM review_queue
                   WHERE tenant_id = %s AND session_id = %s ORDER BY created_at, id""",
                [tenant_id, session_id],
            ).fetchall()
        return SessionTaught(
            session_id=session_id,
            memories=rows_of(TaughtMemoryRow, memories),
            held=rows_of(HeldFromSessionRow, held),
        )

    def list_sessions(
        self, tenant_id: str, *, status: str | None, limit: int, cursor: str | None
    ) -> tuple[list[SessionListRow], str | None]:
        """One page of the tenant's sessions, newest first, each with its flushes' summed counts.

        Keyset pagination on (created_at, id), which never changes for a session; ordering by
        the last message would let an active session jump between pages.
        """
        where = ["s.tenant_id = %(tenant)s"]
        params: dict[str, Any] = {"tenant": tenant_id, "limit": limit + 1}
        if status is not None:
            where.append("s.status = %(status)s")
            params["status"] = status
        after = _decode_cursor(cursor)
        if after is not None:
            where.append("(s.created_at, s.id) < (%(after_at)s, %(after_id)s)")
            params |= {"after_at": after[0], "after_id": after[1]}
        rows = self.db.tenant_read(
            tenant_id,
            (
                # The page first, then the counts of its rows only: joined before the LIMIT, the
                # aggregate would run for every session of the tenant.
                f"""WITH page AS (
                        SELECT s.id, s.status, s.message_count, s.flushed_through, s.last_message_at,
                               s.ended_at, s.created_at
                        FROM sessions s
                        WHERE {" AND ".join(where)}
                        ORDER BY s.created_at DESC, s.id DESC
                        LIMIT %(limit)s
                    )
                    SELECT p.*,
                           COALESCE(f.flushes, 0) AS flushes,
                           COALESCE(f.flushes_pending, 0) AS flushes_pending,
                           COALESCE(f.flushes_done, 0) AS flushes_done,
                           COALESCE(f.flushes_failed, 0) AS flushes_failed,
                           COALESCE(f.memories_created, 0) AS memories_created,
                           COALESCE(f.memories_merged, 0) AS memories_merged,
                           COALESCE(f.held_for_review, 0) AS held_for_review
                    FROM page p
                    LEFT JOIN LATERAL (
                        SELECT count(*) AS flushes,
                               count(*) FILTER (WHERE status IN ('pending', 'queued', 'processing'))
                                   AS flushes_pending,
                               count(*) FILTER (WHERE status = 'done') AS flushes_done,
                               count(*) FILTER (WHERE status = 'failed') AS flushes_failed,
                               sum((counts->>'memories_created')::int) AS memories_created,
                               sum((counts->>'memories_merged')::int) AS memories_merged,
                               sum((counts->>'held_for_review')::int) AS held_for_review
                        FROM conversation_flushes
                        WHERE tenant_id = %(tenant)s AND session_id = p.id
                    ) f ON true
                    ORDER BY p.created_at DESC, p.id DESC""",
                params,
            ),
        )
        page = rows_of(SessionListRow, rows[:limit])
        more = len(rows) > limit and page
        return page, _encode_cursor(page[-1]["created_at"], page[-1]["id"]) if more else None


def _encode_cursor(at: datetime, session_id: str) -> str:
    return time_session_cursor(at, session_id)


def _decode_cursor(cursor: str | None) -> tuple[datetime, str] | None:
    return read_time_session_cursor(cursor)
