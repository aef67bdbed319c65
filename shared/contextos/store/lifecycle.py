"""The lifecycle's queries (S5): band transitions, reminders, expiry; archival and cold stubs in
``contextos.store.cold``.

Everything is set-based and bounded by a batch size; rows are claimed with
``FOR UPDATE SKIP LOCKED`` so two scans running at once split the work instead of repeating it,
and every batch is one transaction, so a crash leaves each memory either done or untouched.
"""

from __future__ import annotations

from datetime import datetime
from typing import cast
from uuid import UUID

from contextos.config import DecaySettings, LifecycleSettings
from contextos.cursors import read_time_id_cursor, time_id_cursor
from contextos.errors import NotFound
from contextos.ports.lifecycle import TransitionBatch
from contextos.ports.rows import AcknowledgedReminder, ReminderRow, rows_of
from contextos.store.bands import delete_band_pairs
from contextos.store.cold import ACTOR, ColdStore
from contextos.store.db import Database, one
from contextos.store.governance import write_audit
from contextos.store.locks import lock_tenant
from contextos.store.sql import band_case, current_strength, next_transition

STAGES = ("materialize", "archive", "expire", "settle", "text_statistics")
_NO_KEY = (datetime.fromisoformat("0001-01-01T00:00:00+00:00"), UUID(int=0))


# One ts_stat pass feeds both statistics: the common lexemes (S6.2's text search leaves them out,
# migration 0015) and BM25's document frequencies (0016). BM25's mean search-vector length comes
# from the same pass: the ndoc of every lexeme sums to the lexemes of every vector, which is what
# avg(length(search_tsv)) adds up (over the vectors that are not NULL).
TEXT_STATISTICS_SQL = """
    WITH s AS MATERIALIZED (
        SELECT word, ndoc FROM ts_stat(format('SELECT search_tsv FROM memories WHERE tenant_id = %%L'
                                              ' AND state = ''active'' AND tier = ''hot''', %(tenant)s::text))
    ), common AS (
        INSERT INTO text_common_lexemes (tenant_id, lexeme, share)
        SELECT %(tenant)s, s.word, s.ndoc::real / %(hot)s FROM s
        WHERE %(common)s AND s.ndoc >= %(share)s * %(hot)s
        RETURNING 1
    ), frequencies AS (
        INSERT INTO text_lexeme_stats (tenant_id, lexeme, docs)
        SELECT %(tenant)s, s.word, s.ndoc FROM s WHERE %(bm25)s AND s.ndoc >= %(min_docs)s
        RETURNING 1
    ), tenant_stats AS (
        INSERT INTO text_tenant_stats (tenant_id, docs, avg_length)
        SELECT %(tenant)s, n.docs,
               CASE WHEN n.with_text = 0 THEN 1 ELSE (SELECT sum(s.ndoc) FROM s)::numeric / n.with_text END
        FROM (SELECT count(*) AS docs, count(m.search_tsv) AS with_text FROM memories m
              WHERE m.tenant_id = %(tenant)s AND m.state = 'active' AND m.tier = 'hot') n
        WHERE %(bm25)s
        RETURNING 1
    )
    SELECT (SELECT count(*) FROM common) AS common, (SELECT count(*) FROM frequencies) AS frequencies,
           (SELECT count(*) FROM tenant_stats) AS tenants"""


class LifecycleStore(ColdStore):
    def __init__(self, db: Database, decay: DecaySettings, settings: LifecycleSettings) -> None:
        self.db = db
        self.decay = decay
        self.settings = settings

    # -- text statistics ------------------------------------------------------------------------
    def refresh_text_statistics(self, tenant_id: str, *, common: bool = True, bm25: bool = True) -> tuple[int, int]:
        """Recount a large tenant's text statistics in one ts_stat pass over its hot search vectors:
        the lexemes at least ``common_lexeme_share`` of its hot memories hold (a tenant below
        ``common_lexeme_min_memories`` keeps none), and BM25's mean vector length and the document
        frequency of its frequent lexemes (a tenant below ``text_stats_min_memories`` keeps none;
        the search counts live). Returns (common lexemes, BM25 lexemes) stored."""
        cfg = self.settings
        with self.db.tenant_tx(tenant_id) as conn:
            if common:
                conn.execute("DELETE FROM text_common_lexemes WHERE tenant_id = %s", [tenant_id])
            if bm25:
                conn.execute("DELETE FROM text_lexeme_stats WHERE tenant_id = %s", [tenant_id])
                conn.execute("DELETE FROM text_tenant_stats WHERE tenant_id = %s", [tenant_id])
            if not self.db.dialect.keeps_text_statistics():  # every word is searched, counts live
                return 0, 0
            row = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant_id]).fetchone()
            hot = row["hot_memories"] if row else 0
            common = common and hot >= cfg.common_lexeme_min_memories
            bm25 = bm25 and hot >= cfg.text_stats_min_memories
            if not (common or bm25):
                return 0, 0
            params = {
                "tenant": tenant_id,
                "hot": hot,
                "common": common,
                "share": cfg.common_lexeme_share,
                "bm25": bm25,
                "min_docs": cfg.text_stats_min_docs,
            }
            counts = one(conn.execute(TEXT_STATISTICS_SQL, params).fetchone())
            return counts["common"], counts["frequencies"]

    def refresh_common_lexemes(self, tenant_id: str) -> int:
        """Only the common lexemes of :meth:`refresh_text_statistics`."""
        return self.refresh_text_statistics(tenant_id, bm25=False)[0]

    def refresh_text_stats(self, tenant_id: str) -> int:
        """Only BM25's statistics of :meth:`refresh_text_statistics`."""
        return self.refresh_text_statistics(tenant_id, common=False)[1]

    # -- which tenants have work ----------------------------------------------------------
    def due_work(self) -> dict[str, frozenset[str]] | None:
        """Per tenant, the scan's stages that would find something now (``materialize``, ``archive``,
        ``expire``, ``settle``, ``text_statistics``), from one statement of a few index probes per
        tenant (store/definitions/contextos_lifecycle_work.sql); None where the engine has no such
        function (every stage then runs for every tenant, as each finds its own work)."""
        if not self.db.dialect.has_definitions():
            return None
        cfg = self.settings
        with self.db.system_tx() as conn:
            rows = conn.execute(
                "SELECT * FROM contextos_lifecycle_work(%s, %s, %s)",
                [
                    cfg.superseded_archive_after_days * 86400,
                    cfg.scratch_ttl_hours * 3600,
                    min(cfg.text_stats_min_memories, cfg.common_lexeme_min_memories),
                ],
            ).fetchall()
        return {r["tenant_id"]: frozenset(stage for stage in STAGES if r[stage]) for r in rows}

    # -- band transitions and reminders ---------------------------------------------------
    def materialize(self, tenant_id: str, *, after: tuple[datetime, UUID] | None, limit: int) -> TransitionBatch:
        """Write strength, band and next transition for up to ``limit`` due memories, in
        (next_transition_at, id) order after ``after``; open a reminder for each memory that
        has just entered the critical band, or is in it and never had one (a memory admitted there,
        said long ago); the unique index keeps one open per memory."""
        d = self.decay
        strength = current_strength("m")
        after_at, after_id = after or _NO_KEY
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                f"""
                WITH due AS (
                    SELECT ctid, id, band AS old_band, next_transition_at AS old_next FROM memories
                    WHERE tenant_id = %(tenant)s AND state = 'active' AND tier = 'hot'
                      AND next_transition_at <= now() AND (next_transition_at, id) > (%(after_at)s, %(after_id)s)
                    ORDER BY next_transition_at, id
                    LIMIT %(limit)s
                    FOR UPDATE SKIP LOCKED
                ),
                updated AS (
                    UPDATE memories AS m SET
                        strength = {strength},
                        band = {band_case(strength, d)},
                        strength_materialized_at = now(),
                        next_transition_at = {
                    next_transition("m.strength_anchor", "m.strength_anchor_at", "m.decay_rate", strength, d)
                }
                    FROM due
                    WHERE m.ctid = due.ctid  -- the row the claim locked, without a second index lookup
                    RETURNING m.id, m.band, m.strength, due.old_band, due.old_next
                ),
                opened AS (
                    INSERT INTO reminders (tenant_id, memory_id, strength)
                    SELECT %(tenant)s, u.id, u.strength FROM updated u
                    WHERE u.band = 'critical'
                      AND (u.old_band <> 'critical'  -- entered it now, or is in it and never had one
                           OR NOT EXISTS (SELECT 1 FROM reminders r
                                          WHERE r.tenant_id = %(tenant)s AND r.memory_id = u.id))
                    ON CONFLICT (tenant_id, memory_id) WHERE acknowledged_at IS NULL DO NOTHING
                    RETURNING memory_id
                ),
                last AS (SELECT old_next, id FROM updated ORDER BY old_next DESC, id DESC LIMIT 1)
                SELECT (SELECT count(*) FROM updated) AS claimed,
                       (SELECT count(*) FROM updated WHERE band <> old_band) AS changed,
                       (SELECT jsonb_object_agg(band, n) FROM (
                            SELECT band, count(*) AS n FROM updated WHERE band <> old_band GROUP BY band) b) AS bands,
                       (SELECT count(*) FROM opened) AS reminders,
                       (SELECT old_next FROM last) AS last_next,
                       (SELECT id FROM last) AS last_id""",
                {"tenant": tenant_id, "after_at": after_at, "after_id": after_id, "limit": limit},
            ).fetchone()
        row = one(row)
        claimed = int(row["claimed"])
        return TransitionBatch(
            claimed=claimed,
            changed=int(row["changed"]),
            bands=dict(row["bands"] or {}),
            reminders_opened=int(row["reminders"]),
            after=(row["last_next"], row["last_id"]) if claimed == limit else None,
        )

    # -- scratch expiry -------------------------------------------------------------------
    def expire_scratch(self, tenant_id: str, *, limit: int) -> int:
        """Delete up to ``limit`` memories past their expires_at, and scratch memories older than the
        TTL, with an audit entry each. Returns how many went."""
        ttl_s = self.settings.scratch_ttl_hours * 3600
        with self.db.tenant_tx(tenant_id) as conn:
            lock_tenant(conn, tenant_id)
            rows = conn.execute(
                """WITH doomed AS (
                       (SELECT id FROM memories WHERE tenant_id = %(tenant)s AND expires_at <= now() LIMIT %(limit)s)
                       UNION
                       (SELECT id FROM memories
                        WHERE tenant_id = %(tenant)s AND type = 'scratch' AND expires_at IS NULL
                          AND created_at <= now() - make_interval(secs => %(ttl)s) LIMIT %(limit)s)
                   ),
                   locked AS (
                       SELECT m.id FROM memories m JOIN doomed ON doomed.id = m.id
                       WHERE m.tenant_id = %(tenant)s ORDER BY m.id LIMIT %(limit)s FOR UPDATE OF m SKIP LOCKED
                   )
                   DELETE FROM memories m
                   USING locked LEFT JOIN memory_vectors v ON v.tenant_id = %(tenant)s AND v.memory_id = locked.id
                   WHERE m.tenant_id = %(tenant)s AND m.id = locked.id
                   RETURNING m.id, m.type, (m.tier = 'hot' AND m.state = 'active') AS was_hot, v.band_keys""",
                {"tenant": tenant_id, "limit": limit, "ttl": ttl_s},
            ).fetchall()
            if not rows:
                return 0
            # The vector rows went with the memories (cascade): their band keys came back with them.
            delete_band_pairs(
                conn, self.db.dialect, tenant_id, [(k, r["id"]) for r in rows for k in r["band_keys"] or ()]
            )
            hot = sum(1 for r in rows if r["was_hot"])
            if hot:
                conn.execute(
                    "UPDATE tenants SET hot_memories = GREATEST(hot_memories - %s, 0) WHERE tenant_id = %s",
                    [hot, tenant_id],
                )
            write_audit(
                conn,
                tenant_id,
                [{"actor": ACTOR, "action": "deleted", "memory_id": r["id"], "reason": "expired"} for r in rows],
            )
        return len(rows)

    # -- reminders ------------------------------------------------------------------------
    def reminders(
        self, tenant_id: str, *, include_acknowledged: bool, limit: int, cursor: str | None = None
    ) -> tuple[list[ReminderRow], str | None]:
        """Reminders newest first with each memory's exact strength now; a cursor for the next page."""
        before_at, before_id = _decode_cursor(cursor)
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                f"""SELECT r.id, r.memory_id, m.label, m.type, r.strength AS strength_at_open,
                           {current_strength("m")} AS strength, m.tier, m.state, r.opened_at, r.acknowledged_at
                    FROM reminders r JOIN memories m ON m.tenant_id = r.tenant_id AND m.id = r.memory_id
                    WHERE r.tenant_id = %(tenant)s AND (%(all)s OR r.acknowledged_at IS NULL)
                      AND (r.opened_at, r.id) < (%(before_at)s, %(before_id)s)
                    ORDER BY r.opened_at DESC, r.id DESC
                    LIMIT %(limit)s""",
                {
                    "tenant": tenant_id,
                    "all": include_acknowledged,
                    "before_at": before_at,
                    "before_id": before_id,
                    "limit": limit + 1,
                },
            ).fetchall()
        page = rows[:limit]
        next_cursor = _encode_cursor(page[-1]["opened_at"], page[-1]["id"]) if len(rows) > limit else None
        return rows_of(ReminderRow, page), next_cursor

    def acknowledge(self, tenant_id: str, reminder_id: UUID) -> AcknowledgedReminder:
        """Close a reminder (idempotent: acknowledging twice keeps the first time)."""
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                """UPDATE reminders SET acknowledged_at = COALESCE(acknowledged_at, now())
                   WHERE tenant_id = %s AND id = %s
                   RETURNING id, memory_id, strength, opened_at, acknowledged_at""",
                [tenant_id, reminder_id],
            ).fetchone()
        if row is None:
            raise NotFound(f"reminder {reminder_id} not found")
        return cast(AcknowledgedReminder, row)


_FAR_FUTURE = datetime.fromisoformat("9999-12-31T00:00:00+00:00")
_MAX_UUID = UUID(int=(1 << 128) - 1)


def _encode_cursor(at: datetime, row_id: UUID) -> str:
    return time_id_cursor(at, row_id)


def _decode_cursor(cursor: str | None) -> tuple[datetime, UUID]:
    return read_time_id_cursor(cursor) or (_FAR_FUTURE, _MAX_UUID)
