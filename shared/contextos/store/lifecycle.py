"""The lifecycle's queries (S5): band transitions, reminders, archival claims, cold stubs, expiry.

Everything is set-based and bounded by a batch size; rows are claimed with
``FOR UPDATE SKIP LOCKED`` so two scans running at once split the work instead of repeating it,
and every batch is one transaction, so a crash leaves each memory either done or untouched.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings, LifecycleSettings
from contextos.errors import BadRequest, NotFound
from contextos.lsh import sketch
from contextos.scopes import ScopeFilter
from contextos.store.bands import delete_band_pairs, delete_bands, insert_bands
from contextos.store.db import Database, one
from contextos.store.dialect import Dialect
from contextos.store.governance import write_audit
from contextos.store.locks import lock_tenant
from contextos.store.scopes import scope_params, scope_predicate, vector_scope_predicate, vectors_carry_scope
from contextos.store.sql import band_case, current_strength, next_transition
from pgvector import Vector
from psycopg.types.json import Jsonb

ACTOR = "lifecycle"
_NO_KEY = (datetime.fromisoformat("0001-01-01T00:00:00+00:00"), UUID(int=0))


@dataclass
class TransitionBatch:
    """One keyset batch of due memories: how many were looked at, how many changed band, into which."""

    claimed: int = 0
    changed: int = 0
    bands: dict[str, int] = field(default_factory=dict)
    reminders_opened: int = 0
    after: tuple[datetime, UUID] | None = None  # the next batch starts after this key; None when done


@dataclass
class ArchiveRecord:
    memory_id: UUID
    was_active: bool
    reason: str
    payload: bytes  # the full memory as JSON


@dataclass
class ArchiveClaim:
    """Memories claimed for archival in an open transaction: stub them, or leave and roll back."""

    tenant_id: str
    records: list[ArchiveRecord]
    conn: Any
    last_id: UUID | None
    dialect: Dialect

    def stub(self, object_key: str, ranges: Sequence[tuple[int, int]]) -> None:
        """Shrink the hot rows to stubs that point at their bytes in ``object_key``: one transaction
        with the audit entries, committed when the claim's block ends without an error. A stub keeps
        its label, its embedding and the lexical form of label and definition (``stub_tsv``), so
        both searches still find it (S5), and its scope (user, agent, run, tags, metadata), so a
        scoped read still finds it (S11)."""
        conn, tenant = self.conn, self.tenant_id
        ids = [r.memory_id for r in self.records]
        conn.execute(
            """UPDATE memories AS m SET tier = 'cold', state = 'archived', definition = '',
                      stub_tsv = m.search_tsv,
                      acronyms = '{}', initials = NULL, next_transition_at = NULL, cold_object_key = %(key)s,
                      cold_byte_start = s.b, cold_byte_end = s.e, updated_at = now()
               FROM unnest(%(ids)b::uuid[], %(starts)b::int8[], %(ends)b::int8[]) AS s(id, b, e)
               WHERE m.tenant_id = %(tenant)s AND m.id = s.id""",
            {
                "tenant": tenant,
                "key": object_key,
                "ids": ids,
                "starts": [r[0] for r in ranges],
                "ends": [r[1] for r in ranges],
            },
        )
        conn.execute("DELETE FROM memory_items WHERE tenant_id = %s AND memory_id = ANY(%b)", [tenant, ids])
        conn.execute(
            "DELETE FROM relationships WHERE tenant_id = %s AND (src_id = ANY(%b) OR dst_id = ANY(%b))",
            [tenant, ids, ids],
        )
        conn.execute(
            "UPDATE memory_vectors SET searchable = false, cold = true WHERE tenant_id = %s AND memory_id = ANY(%b)",
            [tenant, ids],
        )
        delete_bands(conn, self.dialect, tenant, ids)
        active = sum(1 for r in self.records if r.was_active)
        if active:
            conn.execute(
                "UPDATE tenants SET hot_memories = GREATEST(hot_memories - %s, 0) WHERE tenant_id = %s",
                [active, tenant],
            )
        write_audit(
            conn,
            tenant,
            [
                {
                    "actor": ACTOR,
                    "action": "archived",
                    "memory_id": r.memory_id,
                    "reason": r.reason,
                    "details": {"object_key": object_key, "byte_start": start, "byte_end": end},
                }
                for r, (start, end) in zip(self.records, ranges, strict=True)
            ],
        )


@dataclass
class ColdClaim:
    """A cold stub locked for reactivation; ``restore`` brings it back hot in the same transaction."""

    tenant_id: str
    memory_id: UUID
    norm_key: str
    object_key: str
    byte_start: int
    byte_end: int
    conn: Any


COMMON_LEXEMES_SQL = """
    INSERT INTO text_common_lexemes (tenant_id, lexeme, share)
    SELECT %(tenant)s, s.word, s.ndoc::real / %(hot)s
    FROM ts_stat(format('SELECT search_tsv FROM memories WHERE tenant_id = %%L'
                        ' AND state = ''active'' AND tier = ''hot''', %(tenant)s::text)) AS s
    WHERE s.ndoc >= %(share)s * %(hot)s"""


TEXT_STATS_SQL = """
    INSERT INTO text_lexeme_stats (tenant_id, lexeme, docs)
    SELECT %(tenant)s, s.word, s.ndoc
    FROM ts_stat(format('SELECT search_tsv FROM memories WHERE tenant_id = %%L'
                        ' AND state = ''active'' AND tier = ''hot''', %(tenant)s::text)) AS s
    WHERE s.ndoc >= %(min_docs)s"""


class LifecycleStore:
    def __init__(self, db: Database, decay: DecaySettings, settings: LifecycleSettings) -> None:
        self.db = db
        self.decay = decay
        self.settings = settings

    # -- text statistics ------------------------------------------------------------------------
    def refresh_common_lexemes(self, tenant_id: str) -> int:
        """Recount the lexemes that at least ``common_lexeme_share`` of a large tenant's hot memories
        hold (S6.2's text search leaves them out, migration 0015); a tenant below
        ``common_lexeme_min_memories`` keeps none. One ts_stat pass over the tenant's search vectors."""
        cfg = self.settings
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("DELETE FROM text_common_lexemes WHERE tenant_id = %s", [tenant_id])
            if self.db.dialect.name != "postgres":  # no ts_stat: every word is searched
                return 0
            row = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant_id]).fetchone()
            hot = row["hot_memories"] if row else 0
            if hot < cfg.common_lexeme_min_memories:
                return 0
            return conn.execute(
                COMMON_LEXEMES_SQL, {"tenant": tenant_id, "hot": hot, "share": cfg.common_lexeme_share}
            ).rowcount

    def refresh_text_stats(self, tenant_id: str) -> int:
        """Recount BM25's statistics for a large tenant (migration 0016): its mean search-vector
        length and the document frequency of its frequent lexemes; one ts_stat pass. A smaller
        tenant keeps none, and the search counts live. Returns the lexemes stored."""
        cfg = self.settings
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("DELETE FROM text_lexeme_stats WHERE tenant_id = %s", [tenant_id])
            conn.execute("DELETE FROM text_tenant_stats WHERE tenant_id = %s", [tenant_id])
            if self.db.dialect.name != "postgres":
                return 0
            row = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant_id]).fetchone()
            hot = row["hot_memories"] if row else 0
            if hot < cfg.text_stats_min_memories:
                return 0
            conn.execute(
                """INSERT INTO text_tenant_stats (tenant_id, docs, avg_length)
                   SELECT %(tenant)s, count(*), coalesce(avg(length(m.search_tsv)), 1)
                   FROM memories m WHERE m.tenant_id = %(tenant)s AND m.state = 'active' AND m.tier = 'hot'""",
                {"tenant": tenant_id},
            )
            return conn.execute(TEXT_STATS_SQL, {"tenant": tenant_id, "min_docs": cfg.text_stats_min_docs}).rowcount

    # -- band transitions and reminders ---------------------------------------------------
    def materialize(self, tenant_id: str, *, after: tuple[datetime, UUID] | None, limit: int) -> TransitionBatch:
        """Write strength, band and next transition for up to ``limit`` due memories, in
        (next_transition_at, id) order after ``after``; open a reminder for each memory that
        has just entered the critical band (the unique index keeps one open per memory)."""
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
                    SELECT %(tenant)s, id, strength FROM updated WHERE band = 'critical' AND old_band <> 'critical'
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

    # -- archival -------------------------------------------------------------------------
    @contextmanager
    def claim_archivable(self, tenant_id: str, *, after: UUID | None, limit: int) -> Iterator[ArchiveClaim]:
        """Claim up to ``limit`` hot memories that are forgotten or long superseded (not protected,
        not always_load), in id order after ``after``, with everything about them as JSON.

        The block runs inside the claim's transaction: write the cold object, then call ``stub``;
        an error anywhere rolls everything back and the memories stay hot, exactly as they were.
        The tenant's row lock comes first, as in ingestion, so the two never deadlock.
        """
        with self.db.tenant_tx(tenant_id) as conn:
            lock_tenant(conn, tenant_id)
            rows = conn.execute(
                """
                WITH claimed AS (
                    SELECT id, state, band FROM memories
                    WHERE tenant_id = %(tenant)s AND tier = 'hot' AND (band = 'forgotten' OR state = 'superseded')
                      AND id > %(after)s AND NOT protected AND NOT always_load
                      AND ((state = 'active' AND band = 'forgotten')
                           OR (state = 'superseded' AND COALESCE(superseded_at, updated_at)
                                                           < now() - make_interval(secs => %(superseded_s)s)))
                    ORDER BY id
                    LIMIT %(limit)s
                    FOR UPDATE SKIP LOCKED
                )
                SELECT c.id, c.state, c.band, jsonb_build_object(
                    'format', 1,
                    'memory', to_jsonb(m) - 'search_tsv',
                    'embedder_id', v.embedder_id,
                    'items', COALESCE((SELECT jsonb_agg(to_jsonb(i) ORDER BY i.created_at, i.id) FROM memory_items i
                                       WHERE i.tenant_id = m.tenant_id AND i.memory_id = m.id), '[]'::jsonb),
                    'edges', COALESCE((SELECT jsonb_agg(to_jsonb(e)) FROM (
                            SELECT * FROM relationships r WHERE r.tenant_id = m.tenant_id AND r.src_id = m.id
                            UNION
                            SELECT * FROM relationships r WHERE r.tenant_id = m.tenant_id AND r.dst_id = m.id
                        ) e), '[]'::jsonb),
                    'history', COALESCE((SELECT jsonb_agg(jsonb_build_object('at', a.at, 'actor', a.actor,
                                             'action', a.action, 'reason', a.reason, 'details', a.details)
                                             ORDER BY a.seq)
                                         FROM audit_log a WHERE a.tenant_id = m.tenant_id AND a.memory_id = m.id),
                                        '[]'::jsonb)
                )::text AS payload
                FROM claimed c
                JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = c.id
                LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
                ORDER BY c.id""",
                {
                    "tenant": tenant_id,
                    "after": after or UUID(int=0),
                    "limit": limit,
                    "superseded_s": self.settings.superseded_archive_after_days * 86400,
                },
            ).fetchall()
            records = [
                ArchiveRecord(
                    memory_id=r["id"],
                    was_active=r["state"] == "active",
                    reason="forgotten" if r["state"] == "active" else "superseded",
                    payload=r["payload"].encode(),
                )
                for r in rows
            ]
            yield ArchiveClaim(
                tenant_id=tenant_id,
                records=records,
                conn=conn,
                last_id=records[-1].memory_id if len(records) == limit else None,
                dialect=self.db.dialect,
            )

    # -- reactivation ---------------------------------------------------------------------
    def cold_candidates(
        self,
        tenant_id: str,
        query_vector: Sequence[float],
        text_ids: Sequence[UUID],
        *,
        limit: int,
        scope: ScopeFilter | None = None,
    ) -> list[dict]:
        """The query's cold candidates (S5, forgetting demotes): the ``limit`` cold stubs nearest the
        query by cosine, plus those the text search found (``text_ids``), each with its cosine and
        what scoring reads of it. Whether any comes back is decided against the hot candidates.
        ``scope``: only stubs in it (a stub keeps its memory's scope, S11); where vectors carry the
        scope the nearest are taken within it, elsewhere the tenant's nearest are filtered."""
        dialect = self.db.dialect.name
        near_scope = vector_scope_predicate("v", scope) if vectors_carry_scope(dialect) else "TRUE"
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                f"""WITH near AS (
                       SELECT v.memory_id FROM memory_vectors v
                       WHERE v.tenant_id = %(tenant)s AND v.cold AND {near_scope}
                       ORDER BY v.embedding <=> %(q)s LIMIT %(limit)s
                   )
                   SELECT m.id, m.label, m.type, m.importance, m.access_count, m.last_accessed_at, m.base_trust,
                          m.cold_object_key, m.cold_byte_start, m.cold_byte_end, m.updated_by,
                          COALESCE(1.0 - (v.embedding <=> %(q)s), 0.0) AS similarity
                   FROM memories m
                   LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
                   WHERE m.tenant_id = %(tenant)s AND m.tier = 'cold' AND m.superseded_by IS NULL
                     AND m.cold_object_key IS NOT NULL
                     AND (m.id IN (SELECT memory_id FROM near) OR m.id = ANY(%(ids)s::uuid[]))
                     AND {scope_predicate("m", scope, dialect)}""",
                {"tenant": tenant_id, "q": Vector(list(query_vector)), "limit": limit, "ids": list(text_ids)}
                | scope_params(scope),
            ).fetchall()

    def cold_matches(
        self, tenant_id: str, query_vector: Sequence[float], *, min_similarity: float, limit: int
    ) -> list[dict]:
        """Cold stubs (archived while active) within ``min_similarity`` cosine of the query, best first.

        An exact scan of the tenant's cold vectors (a partial btree finds them): the HNSW index
        serves hot vectors only.
        """
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """SELECT m.id, m.label, m.cold_object_key, m.cold_byte_start, m.cold_byte_end,
                          1.0 - (v.embedding <=> %(q)s) AS similarity
                   FROM memory_vectors v
                   JOIN memories m ON m.tenant_id = v.tenant_id AND m.id = v.memory_id
                   WHERE v.tenant_id = %(tenant)s AND v.cold AND m.tier = 'cold' AND m.superseded_by IS NULL
                     AND m.cold_object_key IS NOT NULL AND (v.embedding <=> %(q)s) <= %(max_distance)s
                   ORDER BY v.embedding <=> %(q)s
                   LIMIT %(limit)s""",
                {
                    "tenant": tenant_id,
                    "q": Vector(list(query_vector)),
                    "max_distance": 1.0 - min_similarity,
                    "limit": limit,
                },
            ).fetchall()

    @contextmanager
    def claim_cold(self, tenant_id: str, memory_id: UUID) -> Iterator[ColdClaim | None]:
        """Lock a cold stub for reactivation (None when it is no longer cold: someone else won)."""
        with self.db.tenant_tx(tenant_id) as conn:
            lock_tenant(conn, tenant_id)
            row = conn.execute(
                """SELECT id, norm_key, cold_object_key, cold_byte_start, cold_byte_end FROM memories
                   WHERE tenant_id = %s AND id = %s AND tier = 'cold' AND cold_object_key IS NOT NULL
                   FOR UPDATE""",
                [tenant_id, memory_id],
            ).fetchone()
            yield (
                ColdClaim(
                    tenant_id=tenant_id,
                    memory_id=row["id"],
                    norm_key=row["norm_key"],
                    object_key=row["cold_object_key"],
                    byte_start=row["cold_byte_start"],
                    byte_end=row["cold_byte_end"],
                    conn=conn,
                )
                if row
                else None
            )

    def restore(self, claim: ColdClaim, payload: dict, *, strength: float, reason: str) -> bool:
        """Bring a cold memory back hot from its archived JSON, at ``strength``, with its items and
        the edges whose other end still exists; False (and nothing changed) when an active memory
        now holds its key, since that one already answers for it."""
        conn, tenant, d = claim.conn, claim.tenant_id, self.decay
        memory = payload["memory"]
        if str(memory["id"]) != str(claim.memory_id):
            raise BadRequest(f"cold object {claim.object_key} holds another memory at that range")
        clash = conn.execute(
            "SELECT 1 FROM memories WHERE tenant_id = %s AND norm_key = %s AND state = 'active'",
            [tenant, claim.norm_key],
        ).fetchone()
        if clash:
            return False
        s = str(float(strength))
        conn.execute(
            f"""UPDATE memories AS m SET tier = 'hot', state = 'active', definition = p.definition, stub_tsv = NULL,
                      metadata = p.metadata, acronyms = p.acronyms, initials = p.initials,
                      strength_anchor = {s}, strength_anchor_at = now(), strength = {s},
                      band = {band_case(s, d)}, strength_materialized_at = now(),
                      next_transition_at = {next_transition(s, "now()", "m.decay_rate", s, d)},
                      last_accessed_at = now(), cold_object_key = NULL, cold_byte_start = NULL,
                      cold_byte_end = NULL, updated_at = now()
               FROM jsonb_populate_record(NULL::memories, %(memory)s) AS p
               WHERE m.tenant_id = %(tenant)s AND m.id = %(id)s""",
            {"tenant": tenant, "id": claim.memory_id, "memory": Jsonb(memory)},
        )
        conn.execute(
            """INSERT INTO memory_items
               SELECT * FROM jsonb_populate_recordset(NULL::memory_items, %s)
               WHERE tenant_id = %s AND memory_id = %s
               ON CONFLICT DO NOTHING""",
            [Jsonb(payload.get("items", [])), tenant, claim.memory_id],
        )
        conn.execute(
            """INSERT INTO relationships
               SELECT e.* FROM jsonb_populate_recordset(NULL::relationships, %(edges)s) AS e
               WHERE e.tenant_id = %(tenant)s
                 AND EXISTS (SELECT 1 FROM memories o WHERE o.tenant_id = e.tenant_id AND o.id = e.src_id)
                 AND EXISTS (SELECT 1 FROM memories o WHERE o.tenant_id = e.tenant_id AND o.id = e.dst_id)
               ON CONFLICT DO NOTHING""",
            {"edges": Jsonb(payload.get("edges", [])), "tenant": tenant},
        )
        vector = conn.execute(
            """UPDATE memory_vectors SET searchable = true, cold = false, indexed = false, updated_at = now()
               WHERE tenant_id = %s AND memory_id = %s RETURNING embedding""",
            [tenant, claim.memory_id],
        ).fetchone()
        if vector is not None:
            lsh = sketch([vector["embedding"].to_list()])
            conn.execute(
                "UPDATE memory_vectors SET band_keys = %s WHERE tenant_id = %s AND memory_id = %s",
                [list(lsh.band_keys[0]), tenant, claim.memory_id],
            )
            insert_bands(conn, tenant, [claim.memory_id], lsh.signatures, lsh.band_keys, fresh=False)
        conn.execute("UPDATE tenants SET hot_memories = hot_memories + 1 WHERE tenant_id = %s", [tenant])
        write_audit(
            conn,
            tenant,
            [
                {
                    "actor": ACTOR,
                    "action": "reactivated",
                    "memory_id": claim.memory_id,
                    "reason": reason,
                    "details": {"object_key": claim.object_key, "strength": strength},
                }
            ],
        )
        return True

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
    ) -> tuple[list[dict], str | None]:
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
        return page, next_cursor

    def acknowledge(self, tenant_id: str, reminder_id: UUID) -> dict:
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
        return row


_FAR_FUTURE = datetime.fromisoformat("9999-12-31T00:00:00+00:00")
_MAX_UUID = UUID(int=(1 << 128) - 1)


def _encode_cursor(at: datetime, row_id: UUID) -> str:
    return base64.urlsafe_b64encode(f"{at.isoformat()}|{row_id}".encode()).decode()


def _decode_cursor(cursor: str | None) -> tuple[datetime, UUID]:
    if not cursor:
        return _FAR_FUTURE, _MAX_UUID
    try:
        at, row_id = base64.urlsafe_b64decode(cursor.encode()).decode().split("|")
        return datetime.fromisoformat(at), UUID(row_id)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadRequest("the cursor is not one this API returned") from exc
