"""The ``MemoryStore``: every query the services run, tenant-scoped and set-based.

Each method takes the tenant explicitly and filters on it even though row-level security
would too: RLS is the second wall, not the first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings
from contextos.errors import NotFound
from contextos.models import DocumentRecord, MemoryCandidate, StoreResult
from contextos.store.db import Database
from contextos.store.sql import band_case, current_strength, next_transition
from pgvector import Vector
from psycopg.types.json import Jsonb

DOCUMENT_COLUMNS = (
    "id, filename, source_type, domain, provenance, status, error, counts, content_hash,"
    " created_at, updated_at, metadata"
)


class MemoryStore:
    def __init__(self, db: Database, decay: DecaySettings) -> None:
        self.db = db
        self.decay = decay

    # -- tenants ---------------------------------------------------------------------------
    def tenant_ids(self) -> list[str]:
        with self.db.system_tx() as conn:
            return [r["tenant_id"] for r in conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")]

    # -- documents -------------------------------------------------------------------------
    def create_document(
        self,
        tenant_id: str,
        *,
        content_hash: str,
        filename: str | None,
        content_type: str | None,
        provenance: str,
        size_bytes: int,
        raw_text: str | None = None,
        raw_s3_key: str | None = None,
        upload_s3_key: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[DocumentRecord, bool]:
        """Insert a queued document, or return the tenant's existing one with the same content."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant_id])
            row = conn.execute(
                f"""INSERT INTO documents (tenant_id, content_hash, filename, content_type, provenance,
                        size_bytes, raw_text, raw_s3_key, upload_s3_key, metadata)
                    VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
                    ON CONFLICT (tenant_id, content_hash) DO NOTHING
                    RETURNING {DOCUMENT_COLUMNS}""",
                [
                    tenant_id,
                    content_hash,
                    filename,
                    content_type,
                    provenance,
                    size_bytes,
                    raw_text,
                    raw_s3_key,
                    upload_s3_key,
                    Jsonb(metadata or {}),
                ],
            ).fetchone()
            if row:
                return DocumentRecord.model_validate(row), True
            existing = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE tenant_id = %s AND content_hash = %s",
                [tenant_id, content_hash],
            ).fetchone()
            return DocumentRecord.model_validate(existing), False

    def get_document(self, tenant_id: str, document_id: UUID) -> DocumentRecord:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                f"SELECT {DOCUMENT_COLUMNS} FROM documents WHERE tenant_id = %s AND id = %s", [tenant_id, document_id]
            ).fetchone()
        if not row:
            raise NotFound(f"document {document_id} not found")
        return DocumentRecord.model_validate(row)

    def claim_document(self, tenant_id: str, document_id: UUID, *, stale_after_s: int) -> dict | None:
        """Move a queued document (or one whose worker died) to processing.

        None when it is finished, or another worker holds it right now: a redelivered
        message then does no work twice.
        """
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """UPDATE documents SET status = 'processing', attempts = attempts + 1, updated_at = now()
                   WHERE tenant_id = %s AND id = %s
                     AND (status = 'queued'
                          OR (status = 'processing' AND updated_at < now() - make_interval(secs => %s)))
                   RETURNING id, filename, content_type, provenance, raw_text, raw_s3_key, upload_s3_key,
                             attempts""",
                [tenant_id, document_id, stale_after_s],
            ).fetchone()

    def release_document(self, tenant_id: str, document_id: UUID, reason: str) -> None:
        """Hand a document back to the queue after a transient failure, keeping the reason."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE documents SET status = 'queued', error = %s, updated_at = now()
                   WHERE tenant_id = %s AND id = %s AND status = 'processing'""",
                [reason[:1000], tenant_id, document_id],
            )

    def document_exists(self, tenant_id: str, document_id: UUID) -> bool:
        with self.db.tenant_tx(tenant_id) as conn:
            return (
                conn.execute(
                    "SELECT 1 FROM documents WHERE tenant_id = %s AND id = %s", [tenant_id, document_id]
                ).fetchone()
                is not None
            )

    def fail_document(self, tenant_id: str, document_id: UUID, reason: str, counts: dict | None = None) -> None:
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(
                """UPDATE documents SET status = 'failed', error = %s, counts = counts || %s, updated_at = now()
                   WHERE tenant_id = %s AND id = %s AND status <> 'done'""",
                [reason[:1000], Jsonb(counts or {}), tenant_id, document_id],
            )

    # -- memories (S4 step 7) --------------------------------------------------------------
    def store_document_concepts(
        self,
        tenant_id: str,
        document_id: UUID,
        candidates: Sequence[MemoryCandidate],
        *,
        embedder_id: str,
        source_type: str,
        domain: str,
        counts: dict[str, Any],
    ) -> StoreResult:
        """Upsert memories, items and edges and finish the document: one transaction, no read-then-write."""
        d = self.decay
        strength = current_strength("m")
        merged_strength = f"LEAST(1.0, {d.reinforce_keep} * {strength} + {1 - d.reinforce_keep})"
        initial = float(d.initial_strength)
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                f"""
                WITH input AS (
                    SELECT * FROM unnest(%(keys)s::text[], %(labels)s::text[], %(defs)s::text[], %(types)s::text[],
                                         %(imps)s::int[], %(embs)s::vector[], %(rates)s::float8[],
                                         %(provs)s::text[], %(trusts)s::float8[])
                        AS t(norm_key, label, definition, type, importance, embedding, decay_rate,
                             provenance, base_trust)
                ),
                upserted AS (
                    INSERT INTO memories AS m (tenant_id, norm_key, label, definition, type, importance,
                        strength_anchor, decay_rate, strength, band, provenance, base_trust, embedding,
                        embedder_id, next_transition_at)
                    SELECT %(tenant)s, i.norm_key, i.label, i.definition, i.type, i.importance,
                           {initial}, i.decay_rate, {initial}, 'strong', i.provenance, i.base_trust, i.embedding,
                           %(embedder)s,
                           {next_transition(str(initial), "now()", "i.decay_rate", str(initial), d)}
                    FROM input i
                    ON CONFLICT (tenant_id, norm_key) WHERE state = 'active' DO UPDATE SET
                        strength_anchor = {merged_strength},
                        strength_anchor_at = now(),
                        strength = {merged_strength},
                        band = {band_case(merged_strength, d)},
                        strength_materialized_at = now(),
                        next_transition_at = {
                    next_transition(merged_strength, "now()", "m.decay_rate", merged_strength, d)
                },
                        importance = GREATEST(m.importance, EXCLUDED.importance),
                        definition = CASE WHEN EXCLUDED.importance > m.importance
                                          OR (EXCLUDED.importance = m.importance
                                              AND length(EXCLUDED.definition) > length(m.definition))
                                     THEN EXCLUDED.definition ELSE m.definition END,
                        embedding = CASE WHEN EXCLUDED.importance > m.importance
                                          OR (EXCLUDED.importance = m.importance
                                              AND length(EXCLUDED.definition) > length(m.definition))
                                     THEN EXCLUDED.embedding ELSE m.embedding END,
                        access_count = m.access_count + 1,
                        last_accessed_at = now(),
                        version = m.version + 1,
                        updated_at = now()
                    RETURNING m.id, m.norm_key, (m.created_at = now()) AS inserted
                ),
                items AS (
                    INSERT INTO memory_items (tenant_id, memory_id, document_id, label, definition, importance)
                    SELECT %(tenant)s, u.id, %(doc)s, i.label, i.definition, i.importance
                    FROM upserted u JOIN input i ON i.norm_key = u.norm_key
                    RETURNING 1
                )
                SELECT u.id, u.norm_key, u.inserted, (SELECT count(*) FROM items) AS item_count FROM upserted u
                """,
                {
                    "tenant": tenant_id,
                    "doc": document_id,
                    "embedder": embedder_id,
                    "keys": [c.norm_key for c in candidates],
                    "labels": [c.label for c in candidates],
                    "defs": [c.definition for c in candidates],
                    "types": [c.type for c in candidates],
                    "imps": [c.importance for c in candidates],
                    "embs": [Vector(c.embedding) for c in candidates],
                    "rates": [c.decay_rate for c in candidates],
                    "provs": [c.provenance.value for c in candidates],
                    "trusts": [c.base_trust for c in candidates],
                },
            ).fetchall()
            ids = {r["norm_key"]: r["id"] for r in rows}
            pairs = sorted(
                {(ids[c.norm_key], ids[r]) for c in candidates for r in c.related_keys if r in ids and r != c.norm_key}
            )
            edges = 0
            if pairs:
                edges = conn.execute(
                    """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
                       SELECT %s, s, d, 'related', 0.5 FROM unnest(%s::uuid[], %s::uuid[]) AS p(s, d)
                       ON CONFLICT (tenant_id, src_id, dst_id, type)
                       DO UPDATE SET weight = LEAST(1.0, relationships.weight + 0.25), updated_at = now()""",
                    [tenant_id, [p[0] for p in pairs], [p[1] for p in pairs]],
                ).rowcount
            result = StoreResult(
                created=sum(1 for r in rows if r["inserted"]),
                merged=sum(1 for r in rows if not r["inserted"]),
                items=rows[0]["item_count"] if rows else 0,
                edges=edges,
                memory_ids=[r["id"] for r in rows],
            )
            conn.execute(
                """UPDATE documents SET status = 'done', error = NULL, source_type = %s, domain = %s,
                          counts = %s, updated_at = now()
                   WHERE tenant_id = %s AND id = %s""",
                [
                    source_type,
                    domain,
                    Jsonb(
                        counts
                        | {
                            "memories_created": result.created,
                            "memories_merged": result.merged,
                            "items": result.items,
                            "edges": result.edges,
                        }
                    ),
                    tenant_id,
                    document_id,
                ],
            )
        return result

    # -- retrieval -------------------------------------------------------------------------
    def vector_search(self, tenant_id: str, embedding: Sequence[float], *, k: int, ef_search: int) -> list[dict]:
        """Top-k hot active memories by cosine; exact when the ANN pass cannot return k in scope.

        pgvector 0.6 filters ANN results after the index scan (FIELD-NOTES): a small tenant
        beside a large one can get fewer than k rows. A short ANN answer is re-asked exactly.
        """
        query = f"""
            SELECT m.id, m.label, m.definition, m.type, m.importance, m.access_count, m.always_load,
                   m.last_accessed_at, m.provenance, m.base_trust, {current_strength("m")} AS strength,
                   1.0 - (m.embedding <=> %(q)s) AS vector_sim
            FROM memories m
            WHERE m.tenant_id = %(tenant)s AND m.tier = 'hot' AND m.state = 'active' AND m.embedding IS NOT NULL
            ORDER BY m.embedding <=> %(q)s
            LIMIT %(k)s"""
        params = {"q": Vector(list(embedding)), "tenant": tenant_id, "k": k}
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute(self.db.dialect.search_breadth_sql(max(ef_search, k)))
            rows = conn.execute(query, params).fetchall()
            if len(rows) < k and (exact := self.db.dialect.exact_scan_sql()):
                conn.execute(exact)
                rows = conn.execute(query, params).fetchall()
        return rows

    def sources_of(self, tenant_id: str, memory_ids: Sequence[UUID]) -> dict[UUID, list[str]]:
        """memory id → its distinct sources (documents or sessions), in one query."""
        if not memory_ids:
            return {}
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                """SELECT memory_id,
                          array_agg(DISTINCT coalesce(document_id::text, 'session:' || session_id)) AS sources
                   FROM memory_items WHERE tenant_id = %s AND memory_id = ANY(%s) GROUP BY memory_id""",
                [tenant_id, list(memory_ids)],
            ).fetchall()
        return {r["memory_id"]: sorted(s for s in r["sources"] if s) for r in rows}

    def reinforce_and_log(
        self,
        tenant_id: str,
        memory_ids: Sequence[UUID],
        *,
        intent: str,
        budget: int,
        tokens_used: int,
        session_id: str | None = None,
    ) -> None:
        """S5 reinforcement of exactly the injected memories and the context_log row: one statement each."""
        d = self.decay
        strength = current_strength("m")
        reinforced = f"LEAST(1.0, {d.reinforce_keep} * {strength} + {1 - d.reinforce_keep})"
        with self.db.tenant_tx(tenant_id) as conn:
            if memory_ids:
                conn.execute(
                    f"""UPDATE memories AS m SET
                            strength_anchor = {reinforced},
                            strength = {reinforced},
                            band = {band_case(reinforced, d)},
                            next_transition_at = {next_transition(reinforced, "now()", "m.decay_rate", reinforced, d)},
                            strength_anchor_at = now(),
                            strength_materialized_at = now(),
                            last_accessed_at = now(),
                            access_count = m.access_count + 1
                        WHERE m.tenant_id = %s AND m.id = ANY(%s)""",
                    [tenant_id, list(memory_ids)],
                )
            conn.execute(
                """INSERT INTO context_log (tenant_id, session_id, intent, budget, tokens_used, memory_ids)
                   VALUES (%s, %s, %s, %s, %s, %s)""",
                [tenant_id, session_id, intent, budget, tokens_used, list(memory_ids)],
            )

    # -- lifecycle (S5) --------------------------------------------------------------------
    def materialize_transitions(
        self, tenant_id: str, *, batch_size: int, after: UUID | None
    ) -> tuple[int, UUID | None, dict[str, int]]:
        """One keyset batch: write strength, band and next transition for memories whose band is due.

        Returns (rows updated, last id for the next batch or None when done, band counts).
        """
        d = self.decay
        strength = current_strength("m")
        with self.db.tenant_tx(tenant_id) as conn:
            rows = conn.execute(
                f"""
                WITH due AS (
                    SELECT id FROM memories
                    WHERE tenant_id = %(tenant)s AND state = 'active' AND tier = 'hot'
                      AND next_transition_at <= now() AND id > %(after)s
                    ORDER BY id
                    LIMIT %(limit)s
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE memories AS m SET
                    strength = {strength},
                    band = {band_case(strength, d)},
                    strength_materialized_at = now(),
                    next_transition_at = {
                    next_transition("m.strength_anchor", "m.strength_anchor_at", "m.decay_rate", strength, d)
                }
                FROM due
                WHERE m.tenant_id = %(tenant)s AND m.id = due.id
                RETURNING m.id, m.band""",
                {"tenant": tenant_id, "after": after or UUID(int=0), "limit": batch_size},
            ).fetchall()
        bands: dict[str, int] = {}
        for r in rows:
            bands[r["band"]] = bands.get(r["band"], 0) + 1
        last = max((r["id"] for r in rows), default=None)
        return len(rows), (last if len(rows) == batch_size else None), bands

    def memory_count(self, tenant_id: str) -> int:
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute("SELECT count(*) AS n FROM memories WHERE tenant_id = %s", [tenant_id]).fetchone()["n"]

    def get_memory(self, tenant_id: str, memory_id: UUID) -> dict:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                f"""SELECT m.id, m.norm_key, m.label, m.definition, m.type, m.importance, m.strength_anchor,
                           m.strength_anchor_at, m.strength, m.band, m.access_count, m.last_accessed_at,
                           m.tier, m.state, m.provenance, m.base_trust, m.embedder_id, m.decay_rate,
                           m.next_transition_at, m.created_at, m.updated_at, {current_strength("m")} AS strength_now
                    FROM memories m WHERE m.tenant_id = %s AND m.id = %s""",
                [tenant_id, memory_id],
            ).fetchone()
        if not row:
            raise NotFound(f"memory {memory_id} not found")
        return row
