"""The lifecycle's archival and cold-stub queries (S5): claiming memories to archive, stubbing them,
finding cold stubs a read may restore, and restoring them. Rows are claimed with
``FOR UPDATE SKIP LOCKED`` so two scans running at once split the work."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from uuid import UUID

from contextos.config import DecaySettings, LifecycleSettings
from contextos.errors import BadRequest
from contextos.lsh import sketch
from contextos.ports.lifecycle import ArchiveRecord
from contextos.scopes import ScopeFilter
from contextos.store.bands import delete_bands, insert_bands
from contextos.store.db import Conn, Database
from contextos.store.dialect import Dialect
from contextos.store.governance import write_audit
from contextos.store.locks import lock_tenant
from contextos.store.scopes import scope_params, scope_predicate, vector_scope_predicate
from contextos.store.sql import band_case, next_transition
from pgvector import Vector
from psycopg.types.json import Jsonb

ACTOR = "lifecycle"


@dataclass
class ArchiveClaim:
    """Memories claimed for archival in an open transaction: stub them, or leave and roll back."""

    tenant_id: str
    records: list[ArchiveRecord]
    conn: Conn
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
    conn: Conn


class ColdStore:
    """Archival and restore, on the lifecycle store (``db``, ``decay``, ``settings``)."""

    db: Database
    decay: DecaySettings
    settings: LifecycleSettings

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
        dialect = self.db.dialect
        near_scope = vector_scope_predicate("v", scope) if dialect.vectors_carry_scope() else "TRUE"
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                f"""WITH near AS (
                       SELECT v.memory_id FROM memory_vectors v
                       WHERE v.tenant_id = %(tenant)s AND v.cold AND {near_scope}
                       ORDER BY v.embedding <=> %(q)s LIMIT %(limit)s
                   )
                   SELECT m.id, m.label, m.norm_key, m.type, m.importance, m.access_count, m.last_accessed_at,
                          m.base_trust,
                          m.cold_object_key, m.cold_byte_start, m.cold_byte_end, m.updated_by, m.valid_from,
                          {"tsvector_to_array(m.stub_tsv)" if dialect.keeps_subject_terms() else "NULL"} AS lexemes,
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
