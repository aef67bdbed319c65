"""The ``MemoryStore``: every query the services run, tenant-scoped and set-based.

Each method takes the tenant explicitly and filters on it even though row-level security
would too: RLS is the second wall, not the first.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from functools import lru_cache
from typing import Any
from uuid import UUID

import numpy as np
from contextos.config import DecaySettings, MergeSettings
from contextos.decay import weibull_scale as decay_weibull_scale
from contextos.errors import NotFound
from contextos.evidence import stem_key
from contextos.faults import crash_point
from contextos.governance_models import HeldCandidate
from contextos.lsh import PREFIX_BITS, Sketch, max_hamming, signature_prefix, sketch
from contextos.models import DocumentRecord, MemoryCandidate, Provenance, StoreResult
from contextos.normalization import acronyms, initials
from contextos.scopes import key_owner
from contextos.sources import ConceptSource, DocumentSource, SessionSource
from contextos.store.bands import band_params, delete_bands, flat_keys, insert_bands, keys_literal
from contextos.store.batch import StatementBatch
from contextos.store.db import Database
from contextos.store.governance import (
    ContradictionGate,
    GateOutcome,
    GovernanceStore,
    JudgementCache,
    insert_subject_terms,
    write_audit,
)
from contextos.store.history import PoolRequest, candidate_pool_sql, graph_walk_sql, live_now, walk_params
from contextos.store.scopes import key_owner_sql
from contextos.store.session_neighbours import link_session_neighbours
from contextos.store.sql import band_case, current_strength, next_transition, reinforced, weibull_scale
from contextos.store.text_search import BM25Params, bm25_call, phrases_call, rank_text, search_phrases
from pgvector import Vector
from psycopg.types.json import Jsonb

DOCUMENT_COLUMNS = (
    "id, filename, source_type, domain, provenance, status, error, counts, content_hash,"
    " created_at, updated_at, metadata"
)


class MemoryStore:
    def __init__(
        self,
        db: Database,
        decay: DecaySettings,
        merge: MergeSettings | None = None,
        gate: ContradictionGate | None = None,
    ) -> None:
        self.db = db
        self.decay = decay
        self.merge = merge or MergeSettings()
        self.gate = gate  # the S7 contradiction gate; None admits without judging (benchmarks, tests)
        self._scope_sizes: dict[str, tuple[int, float]] = {}  # tenant → (hot memories, read at monotonic s)

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
        source_s3_key: str | None = None,
        upload_s3_key: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> tuple[DocumentRecord, bool]:
        """Insert a queued document, or return the tenant's existing one with the same content."""
        with self.db.tenant_tx(tenant_id) as conn:
            conn.execute("INSERT INTO tenants (tenant_id) VALUES (%s) ON CONFLICT DO NOTHING", [tenant_id])
            row = conn.execute(
                f"""INSERT INTO documents (tenant_id, content_hash, filename, content_type, provenance,
                        size_bytes, raw_text, source_s3_key, upload_s3_key, metadata)
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
                    source_s3_key,
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
                   RETURNING id, filename, content_type, provenance, raw_text, source_s3_key, upload_s3_key,
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
        raw_text: str | None = None,
        raw_s3_key: str | None = None,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
    ) -> StoreResult:
        """``store_concepts`` for a document (the provenance lives on each candidate)."""
        source = DocumentSource(
            document_id=document_id,
            provenance=candidates[0].provenance if candidates else Provenance.user_upload,
            source_type=source_type,
            domain=domain,
            counts=counts,
            raw_text=raw_text,
            raw_s3_key=raw_s3_key,
        )
        return self.store_concepts(tenant_id, candidates, source, embedder_id=embedder_id, held=held, actor=actor)

    def store_concepts(
        self,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        source: ConceptSource,
        *,
        embedder_id: str,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
    ) -> StoreResult:
        """Admit ``candidates`` and finish the source (a document's status and counts, or a
        conversation flush) in one transaction under the tenant's row lock: the merge and
        contradiction decisions that look at existing memories cannot race a concurrent ingest,
        and the upserts make a crash or a redelivery leave nothing half-written. A conversation
        range already stored (a redelivered job racing its first run) writes nothing.
        """
        prejudged = self.prejudge(tenant_id, candidates)  # governance (S7): slow judging off the lock
        with self.db.tenant_tx(tenant_id) as conn:
            if isinstance(source, SessionSource) and self._flush_done(conn, tenant_id, source):
                return StoreResult(already_stored=True)
            result, _ = self.admit(
                conn,
                tenant_id,
                candidates,
                embedder_id=embedder_id,
                source=source,
                held=held,
                actor=actor,
                prejudged=prejudged,
                finish=lambda c, counts: self._finish_source(c, tenant_id, source, source.counts | counts),
            )
            crash_point("store:before_commit")
        crash_point("store:after_commit")
        return result

    @staticmethod
    def _flush_done(conn: Any, tenant_id: str, source: SessionSource) -> bool:
        row = conn.execute(
            """SELECT status FROM conversation_flushes
               WHERE tenant_id = %s AND session_id = %s AND message_from = %s FOR UPDATE""",
            [tenant_id, source.session_id, source.message_from],
        ).fetchone()
        return row is not None and row["status"] == "done"

    @staticmethod
    def _finish_source(conn: Any, tenant_id: str, source: ConceptSource, counts: dict[str, Any]) -> None:
        """The source's own bookkeeping, in the memories' transaction."""
        match source:
            case DocumentSource():
                conn.execute(
                    """UPDATE documents SET status = 'done', error = NULL, source_type = %s, domain = %s,
                              raw_text = %s, raw_s3_key = COALESCE(%s, raw_s3_key), counts = %s, updated_at = now()
                       WHERE tenant_id = %s AND id = %s""",
                    [
                        source.source_type,
                        source.domain,
                        source.raw_text,
                        source.raw_s3_key,
                        Jsonb(counts),
                        tenant_id,
                        source.document_id,
                    ],
                )
            case SessionSource():
                conn.execute(
                    """UPDATE conversation_flushes SET status = 'done', error = NULL, counts = %s, updated_at = now()
                       WHERE tenant_id = %s AND session_id = %s AND message_from = %s""",
                    [Jsonb(counts), tenant_id, source.session_id, source.message_from],
                )

    def admit(
        self,
        conn: Any,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        embedder_id: str,
        source: ConceptSource | None = None,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
        prejudged: JudgementCache | None = None,
        finish: Callable[[Any, dict[str, Any]], None] | None = None,
    ) -> tuple[StoreResult, dict[str, Any]]:
        """S4 step 7 inside the caller's transaction, for any source (None: a manual memory or a
        promotion): the tenant lock, merges, the contradiction gate (S7), upserts, items, edges
        and audit rows. Held candidates (the trust gate's) go to the review queue only. Returns
        the result and its counts. ``finish(conn, counts)`` runs last, with the final writes (one
        round trip): the source's own bookkeeping."""
        # Each embedding crosses into numpy once: the LSH sketch and the vectors sent to SQL share it.
        matrix = np.asarray([c.embedding for c in candidates], dtype=np.float32)
        lsh = sketch(matrix)
        vectors = [Vector(row) for row in matrix]
        hot, merge_into, merge_reasons = self._lock_and_find_merge_targets(conn, tenant_id, candidates, lsh, vectors)
        document_id = source.document_id if isinstance(source, DocumentSource) else None
        session_id = source.session_id if isinstance(source, SessionSource) else None
        # -- governance (S7): held candidates land in the review queue and nowhere else ----------
        review_ids = GovernanceStore.hold(
            conn,
            tenant_id,
            held,
            actor=actor,
            document_id=document_id,
            session_id=session_id,
            messages=(source.message_from, source.message_to) if isinstance(source, SessionSource) else None,
        )
        final_keys = [merge_into.get(i, c.norm_key) for i, c in enumerate(candidates)]
        # -- governance (S7): the contradiction gate, under the tenant lock ------------------------
        gate = (
            self.gate.judge_batch(
                conn, tenant_id, candidates, final_keys, hot_memories=hot, dialect=self.db.dialect.name, cache=prejudged
            )
            if self.gate
            else GateOutcome()
        )
        for i, superseded in gate.supersedes.items():
            # A candidate that contradicts the memory it would merge into stands alone instead.
            if final_keys[i] != candidates[i].norm_key and final_keys[i] in {gate.keys[m] for m in superseded}:
                merge_into.pop(i, None)
                merge_reasons.pop(i, None)
                final_keys[i] = candidates[i].norm_key
        ContradictionGate.close_superseded(conn, tenant_id, gate)
        chosen = _one_per_key(candidates, final_keys)
        memories = [memory for _, memory in chosen]
        memory_sketches = {memory.norm_key: (lsh.signatures[i], lsh.band_keys[i], vectors[i]) for i, memory in chosen}
        texts = _source_texts(candidates, final_keys, chosen)
        rows = self._upsert_memories(conn, tenant_id, memories, texts) if memories else []
        ids = {r["norm_key"]: r["id"] for r in rows}
        remap = {c.norm_key: key for c, key in zip(candidates, final_keys, strict=True)}
        pairs = sorted(
            {
                (ids[key], ids[remap.get(r, r)])
                for c, key in zip(candidates, final_keys, strict=True)
                for r in c.related_keys
                if remap.get(r, r) in ids and remap.get(r, r) != key
            }
        )
        created = sum(1 for r in rows if r["inserted"])
        result = StoreResult(
            created=created,
            merged=len(candidates) - created,
            items=len(candidates),
            edges=len(pairs),
            memory_ids=[r["id"] for r in rows],
        )
        merge_counts = {reason: list(merge_reasons.values()).count(reason) for reason in set(merge_reasons.values())}
        admitted_counts = {
            "memories_created": result.created,
            "memories_merged": result.merged,
            "merged_by": merge_counts,
            "items": result.items,
            "edges": result.edges,
            "held_for_review": len(review_ids),
            "judged": gate.judged,
            "judged_under_lock": gate.judged_under_lock,
            "judge_failures": gate.judge_failures,
            "superseded": len(gate.superseded_ids),
            "corroborated": sum(len(v) for v in gate.corroborates.values()),
        }
        # Nothing below reads a result: one pipelined round trip, and on PostgreSQL the independent
        # writes, the source's own update included, go as one statement (contextos.store.batch).
        with conn.pipeline():
            writes = StatementBatch(conn, combine=self.db.dialect.name == "postgres")
            self._write_vectors(writes, tenant_id, memories, rows, embedder_id, memory_sketches)
            if self.db.dialect.name == "postgres":
                fresh = [r for r in rows if r["inserted"]]
                insert_subject_terms(writes, tenant_id, [r["id"] for r in fresh], [r["norm_key"] for r in fresh])
            self._insert_items(writes, tenant_id, source, candidates, final_keys, ids)
            self._upsert_related_edges(writes, tenant_id, pairs, {r["id"] for r in rows if r["inserted"]})
            if created:
                writes.execute(
                    "UPDATE tenants SET hot_memories = hot_memories + %s WHERE tenant_id = %s",
                    [created, tenant_id],
                )
            if self.gate:
                writes.flush()
                self.gate.link(conn, tenant_id, gate, [ids[k] for k in final_keys], actor=actor)
            write_audit(writes, tenant_id, _admission_audit(rows, actor, source))
            if finish:
                finish(writes, admitted_counts)
            writes.flush()
        return result, admitted_counts

    def add_memories(
        self,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        embedder_id: str,
        at: Sequence[datetime] | None = None,
        session_id: str | None = None,
        message_seqs: Sequence[int] | None = None,
    ) -> list[UUID]:
        """Store each candidate as its own memory, as given: no merging (manual memories, imports,
        one memory per conversation turn). ``at`` backdates each one (when it was said or learned);
        ``session_id``/``message_seqs`` record where each came from. Returns the new ids in order."""
        if not candidates:
            return []
        d = self.decay
        times = list(at) if at is not None else [None] * len(candidates)
        seqs = list(message_seqs) if message_seqs is not None else [None] * len(candidates)
        policy = self._policy_columns(tenant_id)
        with self.db.tenant_tx(tenant_id) as conn:
            self._lock_tenant(conn, tenant_id)
            rows = conn.execute(
                f"""INSERT INTO memories AS m (tenant_id, norm_key, label, definition, type, importance,
                        strength_anchor, strength_anchor_at, decay_rate, provenance, base_trust, initials, acronyms,
                        last_accessed_at, valid_from, recorded_at, created_at, updated_at, next_transition_at,
                        decay_policy, decay_scale, decay_shape)
                    SELECT %(tenant)s, i.norm_key, i.label, i.definition, i.type, i.importance,
                           {float(d.initial_strength)}, COALESCE(i.at, now()), i.decay_rate, i.provenance,
                           i.base_trust, NULL, '{{}}', COALESCE(i.at, now()), COALESCE(i.at, now()),
                           COALESCE(i.at, now()), COALESCE(i.at, now()), COALESCE(i.at, now()),
                           {
                    next_transition(
                        str(float(d.initial_strength)),
                        "COALESCE(i.at, now())",
                        "i.decay_rate",
                        str(float(d.initial_strength)),
                        d,
                        **policy["sql"],
                    )
                },
                           %(policy)s, %(scale)s, %(shape)s
                    FROM unnest(%(keys)b::text[], %(labels)b::text[], %(defs)b::text[], %(types)b::text[],
                                %(imps)b::int[], %(rates)b::float8[], %(provs)b::text[], %(trusts)b::float8[],
                                %(ats)s::timestamptz[])
                        AS i(norm_key, label, definition, type, importance, decay_rate, provenance, base_trust, at)
                    RETURNING m.id""",
                {"tenant": tenant_id, "ats": times, **policy["params"], **_candidate_columns(candidates)},
            ).fetchall()
            ids = [r["id"] for r in rows]
            memory_rows = [
                {"id": i, "norm_key": c.norm_key, "definition": c.definition, "type": c.type, "inserted": True}
                for i, c in zip(ids, candidates, strict=True)
            ]
            lsh = sketch([c.embedding for c in candidates])
            with conn.pipeline():
                self._write_vectors(
                    conn,
                    tenant_id,
                    list(candidates),
                    memory_rows,
                    embedder_id,
                    {
                        c.norm_key: (lsh.signatures[i], lsh.band_keys[i], Vector(c.embedding))
                        for i, c in enumerate(candidates)
                    },
                )
                conn.execute(
                    """INSERT INTO memory_items (tenant_id, memory_id, session_id, message_from, message_to, label,
                                                 definition, importance)
                       SELECT %s, m, %s, s, s, l, d, i
                       FROM unnest(%b::uuid[], %b::int[], %b::text[], %b::text[], %b::int[]) AS t(m, s, l, d, i)""",
                    [
                        tenant_id,
                        session_id,
                        ids,
                        seqs,
                        [c.label for c in candidates],
                        [c.definition for c in candidates],
                        [c.importance for c in candidates],
                    ],
                )
                conn.execute(
                    "UPDATE tenants SET hot_memories = hot_memories + %s WHERE tenant_id = %s", [len(ids), tenant_id]
                )
                if self.db.dialect.name == "postgres":
                    insert_subject_terms(conn, tenant_id, ids, [c.norm_key for c in candidates])
                if session_id is not None:
                    link_session_neighbours(conn, tenant_id, session_id, ids, seqs, self.merge.session_neighbour_weight)
        return ids

    def prejudge(self, tenant_id: str, candidates: Sequence[MemoryCandidate]) -> JudgementCache | None:
        """Run the contradiction gate's judge before the admission transaction (see ContradictionGate)."""
        if not (self.gate and self.gate.prejudges and candidates):
            return None
        return self.gate.prejudge(self.db, tenant_id, candidates)

    @staticmethod
    def _lock_tenant(conn: Any, tenant_id: str) -> int:
        """Serialize step 7 per tenant (a row lock works in both dialects); return its hot count
        (zero means there is nothing to merge with, so the lookups are skipped)."""
        row = conn.execute(LOCK_TENANT_SQL, [tenant_id]).fetchone()
        return int(row["hot_memories"])

    def _lock_and_find_merge_targets(
        self, conn: Any, tenant_id: str, candidates: Sequence[MemoryCandidate], lsh: Sketch, vectors: list[Vector]
    ) -> tuple[int, dict[int, str], dict[int, str]]:
        """The tenant lock, then every merge lookup, in one round trip (a pipeline: the server runs
        them in order, so the lookups run under the lock). Returns the tenant's hot count and, per
        candidate index, the existing memory it joins and why (see ``_merge_targets``).

        The near-duplicate probe is sent for every candidate at once rather than after the exact and
        acronym lookups; its answers count only for candidates those lookups left unmatched."""
        if not candidates:
            return self._lock_tenant(conn, tenant_id), {}, {}
        lookup_sql, lookup_params = self._merge_lookup_query(tenant_id, candidates)
        near_ctes, near_params = self._near_duplicate_ctes(tenant_id, candidates, lsh, vectors)
        with conn.pipeline():
            lock = conn.execute(LOCK_TENANT_SQL, [tenant_id])
            # A statement of its own after the lock's, so its snapshot sees what committed meanwhile.
            found = conn.execute(
                f"""WITH {near_ctes},
                   lookups AS ({lookup_sql})
                   SELECT false AS near, l.exact, l.norm_key, l.initials, l.acronyms, l.importance, l.created_at,
                          NULL::int AS idx, NULL::float8 AS similarity
                   FROM lookups l
                   UNION ALL
                   SELECT true, NULL, n.norm_key, NULL, NULL, NULL, NULL, n.idx, n.similarity FROM near n""",
                lookup_params | near_params,
            )
            hot = int(lock.fetchone()["hot_memories"])
            rows = found.fetchall()
        # Acronym pairs are tried most important first, then oldest (the order of ``_merge_targets``).
        lookup_rows = sorted(
            (r for r in rows if not r["near"]),
            key=lambda r: (-r["importance"], r["created_at"] is None, r["created_at"] or 0),
        )
        near_rows = [r for r in rows if r["near"]]
        if not hot:
            return hot, {}, {}
        targets, reasons = self._merge_targets(candidates, lookup_rows, _nearest_by_candidate(near_rows))
        return hot, targets, reasons

    def _policy_columns(self, tenant_id: str) -> dict[str, dict[str, str | float]]:
        """The tenant's decay policy for new memories: SQL for ``next_transition`` and the column values."""
        d = self.decay
        return {
            "sql": {
                "policy_sql": "%(policy)s::text",
                "scale_sql": "%(scale)s::float8",
                "shape_sql": "%(shape)s::float8",
            },
            "params": {
                "policy": d.policy_for(tenant_id),
                "scale": decay_weibull_scale(0, d.weibull),
                "shape": d.weibull.shape,
            },
        }

    @staticmethod
    def _merge_lookup_query(tenant_id: str, candidates: Sequence[MemoryCandidate]) -> tuple[str, dict]:
        """Exact keys, then acronym pairs such as "GRPO" ↔ "Group Relative Policy Optimization", both
        through btree indexes in one query."""
        return (
            """SELECT true AS exact, norm_key, NULL::text AS initials, NULL::text[] AS acronyms, 0 AS importance,
                      NULL::timestamptz AS created_at
               FROM memories WHERE tenant_id = %(tenant)s AND state = 'active' AND norm_key = ANY(%(keys)b::text[])
               UNION ALL
               SELECT false, norm_key, initials, acronyms, importance, created_at FROM memories
               WHERE tenant_id = %(tenant)s AND state = 'active' AND initials = ANY(%(acronyms)b::text[])
               UNION ALL
               SELECT false, norm_key, initials, acronyms, importance, created_at FROM memories
               WHERE tenant_id = %(tenant)s AND state = 'active' AND cardinality(acronyms) > 0
                 AND acronyms[1] = ANY(%(initials)b::text[])""",
            {
                "tenant": tenant_id,
                "keys": [c.norm_key for c in candidates],
                "initials": sorted({v for v in (_label_initials(c.label) for c in candidates) if v}),
                "acronyms": sorted({a for c in candidates for a in _label_acronyms(c.label)}),
            },
        )

    @staticmethod
    def _merge_targets(
        candidates: Sequence[MemoryCandidate], lookup_rows: Sequence[dict], nearest: dict[int, str]
    ) -> tuple[dict[int, str], dict[int, str]]:
        """For each candidate without an exact key match: the existing memory it should join.

        An acronym pair wins over a near duplicate; the near duplicate (same type, cosine at or
        above the threshold, ``nearest``) counts only for what is still unmatched.
        """
        cand_initials = {i: _label_initials(c.label) for i, c in enumerate(candidates)}
        cand_acronyms = {i: _label_acronyms(c.label) for i, c in enumerate(candidates)}
        existing = {r["norm_key"] for r in lookup_rows if r["exact"]}
        pairs = [r for r in lookup_rows if not r["exact"]]
        targets: dict[int, str] = {}
        reasons: dict[int, str] = {}
        open_idx = [i for i, c in enumerate(candidates) if c.norm_key not in existing]
        for i in open_idx:
            for row in pairs:
                if (
                    row["norm_key"] != candidates[i].norm_key
                    and key_owner(row["norm_key"]) == key_owner(candidates[i].norm_key)
                    and (
                        (cand_initials[i] and cand_initials[i] in row["acronyms"])
                        or (row["initials"] and row["initials"] in cand_acronyms[i])
                    )
                ):
                    targets[i], reasons[i] = row["norm_key"], "acronym"
                    break
        for i in open_idx:
            if i not in targets and i in nearest:
                targets[i], reasons[i] = nearest[i], "near_duplicate"
        return targets, reasons

    def _near_duplicate_query(
        self, tenant_id: str, candidates: Sequence[MemoryCandidate], lsh: Sketch, vectors: Sequence[Vector]
    ) -> tuple[str, dict]:
        """The near-duplicate probe as a statement of its own (see ``_near_duplicate_ctes``)."""
        ctes, params = self._near_duplicate_ctes(tenant_id, candidates, lsh, vectors)
        return f"WITH {ctes} SELECT idx, norm_key, similarity FROM near", params

    def _near_duplicate_ctes(
        self, tenant_id: str, candidates: Sequence[MemoryCandidate], lsh: Sketch, vectors: Sequence[Vector]
    ) -> tuple[str, dict]:
        """CTEs ending in ``near``: (candidate index, key, similarity) rows, the memories of the same
        type close enough to each candidate (``_nearest_by_candidate`` keeps the nearest). ``lsh``
        and ``vectors`` are the candidates' sketch and embeddings, in order.

        Candidates come from shared LSH bands (tenant-scoped btree lookups, see contextos.lsh) whose
        signatures are within the threshold's Hamming distance, read from the index itself; each
        survivor is then checked with the exact cosine. No ANN probe, so the cost does not grow
        with the index, and small tenants beside large ones lose nothing. The band keys come
        computed (``contextos.lsh.sketch``), one (candidate, key) pair per band.

        The lookups are LATERAL subqueries fenced with OFFSET 0, so each is an index probe whatever
        the statistics say: a tenant that grew since the last ANALYZE looks empty to the planner,
        which then prefers to read all its band rows into a hash join (cost growing with the tenant).
        """
        signature_close = self.db.dialect.signature_filter_sql("b", "p.prefix", "%(max_distance)s")
        return (
            f"""probe AS MATERIALIZED (
                   SELECT t.idx, t.type, t.embedding, t.prefix, t.owner
                   FROM unnest(%(idx)b::int[], %(types)b::text[], %(embs)b::vector[], %(prefixes)b::int8[],
                               %(owners)s::text[])
                       AS t(idx, type, embedding, prefix, owner)
               ),
               hits AS MATERIALIZED (
                   SELECT DISTINCT p.idx, b.memory_id
                   FROM unnest(%(band_idx)s::int[], %(band_keys)s::int[]) AS pb(idx, band_key)
                   JOIN probe p ON p.idx = pb.idx
                   CROSS JOIN LATERAL (
                       SELECT b.memory_id, b.signature64 FROM memory_vector_bands b
                       WHERE {self.db.dialect.band_match_sql("b", "pb.band_key")} OFFSET 0
                   ) AS b
                   WHERE {signature_close}
               ),
               near AS (
               SELECT h.idx, v.norm_key, 1.0 - (v.embedding <=> p.embedding) AS similarity
               FROM hits h
               JOIN probe p ON p.idx = h.idx
               CROSS JOIN LATERAL (
                   SELECT m.norm_key, v.embedding
                   FROM memory_vectors v
                   JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = v.memory_id AND m.state = 'active'
                    AND {key_owner_sql("m.norm_key")} IS NOT DISTINCT FROM p.owner
                   WHERE v.tenant_id = %(tenant)s AND v.memory_id = h.memory_id AND v.searchable AND v.type = p.type
                   OFFSET 0
               ) AS v
               WHERE 1.0 - (v.embedding <=> p.embedding) >= %(threshold)s)""",
            band_params(tenant_id)
            | {
                "idx": list(range(len(candidates))),
                "types": [c.type for c in candidates],
                "embs": list(vectors),
                "owners": [key_owner(c.norm_key) for c in candidates],  # S11: merges stay within one owner
                "prefixes": [signature_prefix(s) for s in lsh.signatures],
                "band_idx": keys_literal([i for i, keys in enumerate(lsh.band_keys) for _ in keys]),
                "band_keys": keys_literal(flat_keys(lsh.band_keys)),
                "threshold": self.merge.near_duplicate_cosine,
                "max_distance": max_hamming(self.merge.near_duplicate_cosine, bits=PREFIX_BITS),
            },
        )

    def _write_vectors(
        self,
        conn: Any,
        tenant_id: str,
        memories: list[MemoryCandidate],
        rows: list[dict],
        embedder_id: str,
        lsh_sketches: dict[str, tuple[str, list[int], Vector]],
    ) -> None:
        """A vector (and its LSH bands) for each new memory, and new ones where a merge kept the
        newer definition. Vectors land in the fresh segment (indexed = false): no ANN insert here.
        ``lsh_sketches`` holds each memory's LSH signature, band keys and vector, by norm key."""
        by_key = {m.norm_key: m for m in memories}
        changed = [r for r in rows if r["inserted"] or r["definition"] == by_key[r["norm_key"]].definition]
        if not changed:
            return
        replaced = [r["id"] for r in changed if not r["inserted"]]
        delete_bands(conn, self.db.dialect, tenant_id, replaced)  # through the old keys, before the vector row changes
        for fresh in (True, False):  # a new memory's rows cannot exist yet: plain inserts (no upsert)
            part = [r for r in changed if bool(r["inserted"]) is fresh]
            if not part:
                continue
            upsert = (
                ""
                if fresh
                else """ ON CONFLICT (tenant_id, memory_id) DO UPDATE
                   SET embedding = EXCLUDED.embedding, embedder_id = EXCLUDED.embedder_id, indexed = false,
                       band_keys = EXCLUDED.band_keys, updated_at = now()"""
            )
            conn.execute(
                f"""INSERT INTO memory_vectors (tenant_id, memory_id, type, embedding, embedder_id, band_keys)
                   SELECT %s, i, t, e, %s, k::int[]
                   FROM unnest(%b::uuid[], %b::text[], %b::vector[], %b::text[]) AS v(i, t, e, k){upsert}""",
                [
                    tenant_id,
                    embedder_id,
                    [r["id"] for r in part],
                    [r["type"] for r in part],
                    [lsh_sketches[r["norm_key"]][2] for r in part],
                    [keys_literal(lsh_sketches[r["norm_key"]][1]) for r in part],
                ],
            )
            insert_bands(
                conn,
                tenant_id,
                [r["id"] for r in part],
                [lsh_sketches[r["norm_key"]][0] for r in part],
                [lsh_sketches[r["norm_key"]][1] for r in part],
                fresh=fresh,
            )

    def _upsert_memories(
        self, conn: Any, tenant_id: str, memories: list[MemoryCandidate], texts: dict[str, str] | None = None
    ) -> list[dict]:
        """Insert new memories; a key match reinforces, keeps the better definition and bumps access.
        ``texts`` (by norm key) is what the sources said beyond the definition: it joins the memory's
        ``source_text`` (the searchable excerpts), each passage once, with the definition not kept."""
        d = self.decay
        strength = current_strength("m")
        merged_strength = reinforced(strength, d)
        merged_scale = weibull_scale("m.access_count + 1", d)
        policy = self._policy_columns(tenant_id)
        initial = float(d.initial_strength)
        better = (
            "(EXCLUDED.importance > m.importance OR (EXCLUDED.importance = m.importance"
            " AND length(EXCLUDED.definition) > length(m.definition)))"
        )
        unkept = f"CASE WHEN {better} THEN m.definition ELSE EXCLUDED.definition END"
        return conn.execute(
            f"""
            INSERT INTO memories AS m (tenant_id, norm_key, label, definition, type, importance,
                strength_anchor, decay_rate, strength, band, provenance, base_trust,
                next_transition_at, initials, acronyms, decay_policy, decay_scale, decay_shape, source_text)
            SELECT %(tenant)s, i.norm_key, i.label, i.definition, i.type, i.importance,
                   {initial}, i.decay_rate, {initial}, 'strong', i.provenance, i.base_trust,
                   {next_transition(str(initial), "now()", "i.decay_rate", str(initial), d, **policy["sql"])},
                   i.initials, COALESCE(string_to_array(NULLIF(i.acronyms, ''), ','), '{{}}'),
                   %(policy)s, %(scale)s, %(shape)s, left(i.source_text, {self.merge.source_text_chars})
            FROM unnest(%(keys)b::text[], %(labels)b::text[], %(defs)b::text[], %(types)b::text[],
                        %(imps)b::int[], %(rates)b::float8[], %(provs)b::text[],
                        %(trusts)b::float8[], %(inits)b::text[], %(acrs)b::text[], %(srcs)b::text[])
                AS i(norm_key, label, definition, type, importance, decay_rate, provenance,
                     base_trust, initials, acronyms, source_text)
            ON CONFLICT (tenant_id, norm_key) WHERE state = 'active' DO UPDATE SET
                strength_anchor = {merged_strength},
                strength_anchor_at = now(),
                strength = {merged_strength},
                band = {band_case(merged_strength, d)},
                strength_materialized_at = now(),
                next_transition_at = {
                next_transition(merged_strength, "now()", "m.decay_rate", merged_strength, d, scale_sql=merged_scale)
            },
                decay_scale = {merged_scale},
                importance = GREATEST(m.importance, EXCLUDED.importance),
                definition = CASE WHEN {better} THEN EXCLUDED.definition ELSE m.definition END,
                source_text = left(m.source_text
                    || CASE WHEN m.definition = EXCLUDED.definition OR strpos(m.source_text, {unkept}) > 0
                            THEN '' ELSE E'\\n' || {unkept} END
                    || CASE WHEN EXCLUDED.source_text = '' OR strpos(m.source_text, EXCLUDED.source_text) > 0
                            THEN '' ELSE E'\\n' || EXCLUDED.source_text END, {self.merge.source_text_chars}),
                acronyms = ARRAY(SELECT DISTINCT unnest(m.acronyms || EXCLUDED.acronyms)),
                initials = COALESCE(m.initials, EXCLUDED.initials),
                access_count = m.access_count + 1,
                last_accessed_at = now(),
                version = m.version + 1,
                updated_at = now()
            RETURNING m.id, m.norm_key, m.definition, m.type, (m.created_at = now()) AS inserted
            """,
            {
                "tenant": tenant_id,
                "inits": [_label_initials(c.label) for c in memories],
                "acrs": [",".join(_label_acronyms(c.label)) for c in memories],
                "srcs": [(texts or {}).get(c.norm_key, "") for c in memories],
                **policy["params"],
                **_candidate_columns(memories),
            },
        ).fetchall()

    @staticmethod
    def _insert_items(
        conn: Any,
        tenant_id: str,
        source: ConceptSource | None,
        candidates: Sequence[MemoryCandidate],
        final_keys: list[str],
        ids: dict[str, UUID],
    ) -> None:
        """One memory_item per occurrence, under the memory it ended in, pointing at its source
        (the document, or the session and message range)."""
        if not candidates:
            return
        document_id = source.document_id if isinstance(source, DocumentSource) else None
        session = (
            (source.session_id, source.message_from, source.message_to)
            if isinstance(source, SessionSource)
            else (None, None, None)
        )
        conn.execute(
            """INSERT INTO memory_items (tenant_id, memory_id, document_id, session_id, message_from, message_to,
                                         label, definition, importance, excerpts, excerpt_stems, definition_stems)
               SELECT %s, m, %s, %s, %s, %s, l, d, i, ARRAY(SELECT jsonb_array_elements_text(e::jsonb)),
                      ARRAY(SELECT jsonb_array_elements_text(es::jsonb)), ds
               FROM unnest(%b::uuid[], %b::text[], %b::text[], %b::int[], %b::text[], %b::text[], %b::text[])
                    AS t(m, l, d, i, e, es, ds)""",
            [
                tenant_id,
                document_id,
                *session,
                [ids[k] for k in final_keys],
                [c.label for c in candidates],
                [c.definition for c in candidates],
                [c.importance for c in candidates],
                [json.dumps(c.excerpts) for c in candidates],
                # the L2 matcher's stemmed forms, computed once here (migration 0031)
                [json.dumps([stem_key(e) for e in c.excerpts]) for c in candidates],
                [stem_key(c.definition) for c in candidates],
            ],
        )

    def _upsert_related_edges(
        self, conn: Any, tenant_id: str, pairs: list[tuple[UUID, UUID]], new_ids: set[UUID] | frozenset = frozenset()
    ) -> None:
        """``related`` edges; a repeated one gains weight. An edge touching a memory created in this
        transaction (``new_ids``) cannot exist yet: a plain insert, without the upsert's cost."""
        cfg = self.merge
        fresh = [p for p in pairs if p[0] in new_ids or p[1] in new_ids]
        known = [p for p in pairs if not (p[0] in new_ids or p[1] in new_ids)]
        upsert = f""" ON CONFLICT (tenant_id, src_id, dst_id, type) DO UPDATE
               SET weight = LEAST(1.0, relationships.weight + {cfg.related_edge_step}), updated_at = now()"""
        for part, conflict in ((fresh, ""), (known, upsert)):
            if part:
                conn.execute(
                    f"""INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
                       SELECT %s, s, d, 'related', {cfg.related_edge_weight}
                       FROM unnest(%b::uuid[], %b::uuid[]) AS p(s, d){conflict}""",
                    [tenant_id, [p[0] for p in part], [p[1] for p in part]],
                )

    def memories_of_document(self, tenant_id: str, document_id: UUID) -> list[dict]:
        """Every memory a document taught (document → memories)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """SELECT DISTINCT m.id, m.label, m.type, m.importance, m.state
                   FROM memory_items i JOIN memories m ON m.tenant_id = i.tenant_id AND m.id = i.memory_id
                   WHERE i.tenant_id = %s AND i.document_id = %s AND m.forgotten_at IS NULL ORDER BY m.label""",
                [tenant_id, document_id],
            ).fetchall()

    def sources_of_memory(self, tenant_id: str, memory_id: UUID) -> list[dict]:
        """Every occurrence behind a memory (memory → documents and sessions)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """SELECT i.document_id, d.filename, i.session_id, i.message_from, i.message_to, i.label, i.definition,
                          i.importance, i.created_at
                   FROM memory_items i LEFT JOIN documents d ON d.tenant_id = i.tenant_id AND d.id = i.document_id
                   WHERE i.tenant_id = %s AND i.memory_id = %s ORDER BY i.created_at""",
                [tenant_id, memory_id],
            ).fetchall()

    # -- retrieval -------------------------------------------------------------------------
    def vector_search(
        self,
        tenant_id: str,
        embedding: Sequence[float],
        *,
        k: int,
        ef_search: int,
        exact_scan_max_rows: int = 20_000,
        scope_cache_s: float = 0.0,
    ) -> list[dict]:
        """Top-k hot active memories by cosine, as ``(id, vector_sim)``: ANN over the indexed segment,
        exact over the fresh one (the candidate pool reads the rows).

        pgvector 0.6 filters ANN results after the index scan (FIELD-NOTES): a small tenant
        beside a large one can get fewer than k rows. A short answer is re-asked exactly.
        """
        query = """
            SELECT memory_id AS id, 1.0 - min(distance) AS vector_sim FROM (
                (SELECT v.memory_id, v.embedding <=> %(q)s AS distance
                 FROM memory_vectors v
                 WHERE v.tenant_id = %(tenant)s AND v.searchable AND v.indexed
                 ORDER BY v.embedding <=> %(q)s LIMIT %(k)s)
                UNION ALL
                (SELECT v.memory_id, v.embedding <=> %(q)s AS distance
                 FROM memory_vectors v
                 WHERE v.tenant_id = %(tenant)s AND v.searchable AND NOT v.indexed
                 ORDER BY v.embedding <=> %(q)s LIMIT %(k)s)
            ) segments
            GROUP BY memory_id
            ORDER BY min(distance), memory_id
            LIMIT %(k)s"""
        params = {"q": Vector(list(embedding)), "tenant": tenant_id, "k": k}
        exact = self.db.dialect.exact_scan_sql()
        if exact and self._scope_size(tenant_id, scope_cache_s) <= exact_scan_max_rows:
            # a small scope: one exact pass beats an ANN pass that may come up short
            return self.db.tenant_read(tenant_id, (exact, None), (query, params))
        rows = self.db.tenant_read(
            tenant_id, (self.db.dialect.search_breadth_sql(max(ef_search, k)), None), (query, params)
        )
        if len(rows) < k and exact:
            rows = self.db.tenant_read(tenant_id, (exact, None), (query, params))
        return rows

    def _scope_size(self, tenant_id: str, cache_s: float) -> int:
        """The tenant's hot memories, as read at most ``cache_s`` ago by this process: it only picks
        exact or ANN search, and a count a few seconds old picks as well as a fresh one."""
        cached = self._scope_sizes.get(tenant_id)
        now = time.monotonic()
        if cached is not None and now - cached[1] < cache_s:
            return cached[0]
        rows = self.db.tenant_read(tenant_id, ("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant_id]))
        size = int(rows[0]["hot_memories"]) if rows else 0
        self._scope_sizes[tenant_id] = (size, now)
        return size

    def text_search(self, tenant_id: str, phrases: Sequence[Sequence[str]], *, k: int, cap: int) -> list[dict]:
        """Every key phrase (each followed by its synonyms) over labels and definitions, in one call:
        rows ``(phrase_no, id, rank, label_match)``, the phrase verbatim first, so an exact rare term
        always surfaces (S6.2). PostgreSQL runs it through ``contextos_text_search_phrases``
        (migration 0015), where the GIN index is usable under row-level security."""
        if self.db.dialect.name == "postgres":
            return self.db.tenant_read(tenant_id, phrases_call(phrases, k=k, cap=cap))
        with self.db.tenant_tx(tenant_id) as conn:
            return search_phrases(conn, self.db.dialect.name, tenant_id, phrases, k=k, cap=cap)

    def text_rank(
        self,
        tenant_id: str,
        query: str,
        extra: Sequence[str],
        phrases: Sequence[Sequence[str]],
        *,
        k: int,
        cap: int | None,
        params: BM25Params,
        with_cold: bool = False,
    ) -> list[dict]:
        """S6.2's text search as BM25 over the tenant's statistics (migration 0016): the whole query
        plus ``extra`` terms (synonyms, carried phrases) at a lower weight; rows ``(id, score,
        matched, cold)``, hot memories first, then cold stubs when ``with_cold``."""
        if self.db.dialect.name == "postgres":
            call = bm25_call(query, extra, k=k, cap=cap, params=params, with_cold=with_cold)
            return self.db.tenant_read(tenant_id, call)
        with self.db.tenant_tx(tenant_id) as conn:
            dialect = self.db.dialect.name
            return rank_text(conn, dialect, tenant_id, query, extra, phrases, k=k, cap=cap or k, params=params)

    def same_subject_pairs(self, tenant_id: str, ids: Sequence[UUID], *, min_cosine: float) -> list[dict]:
        """Pairs ``(a, b)`` of the given memories (hot or cold) whose embeddings are at least
        ``min_cosine`` apart: the candidates about the same subject, for the relevance recipe's
        fresher-first rule. Computed in the database (returning vectors as text costs ~1.5 ms each
        to parse)."""
        if len(ids) < 2:
            return []
        return self.db.tenant_read(
            tenant_id,
            (
                """SELECT a.memory_id AS a, b.memory_id AS b
                   FROM memory_vectors a
                   JOIN memory_vectors b ON b.tenant_id = a.tenant_id AND b.memory_id = ANY(%(ids)s::uuid[])
                        AND a.memory_id < b.memory_id
                   WHERE a.tenant_id = %(tenant)s AND a.memory_id = ANY(%(ids)s::uuid[])
                     AND (a.embedding <=> b.embedding) <= %(distance)s""",
                {"tenant": tenant_id, "ids": list(ids), "distance": 1.0 - min_cosine},
            ),
        )

    def graph_expand(
        self, tenant_id: str, seeds: Sequence[UUID], *, hops: int, fall: float, shared_source_weight: float, k: int
    ) -> list[dict]:
        """Memories reachable from the seeds within ``hops`` edges (either direction), weight falling
        per hop; superseded memories lead forward to their successor; memories that share a source
        document or session with a seed count as one-hop links (implicit edges). The walk on its
        own: the read path runs the same SQL inside `candidate_pool`."""
        if not seeds:
            return []
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                graph_walk_sql(live_now, as_of=False, hops=hops),
                walk_params(tenant_id, seeds, fall, shared_source_weight, k),
            ).fetchall()

    def candidate_pool(self, tenant_id: str, query_vector: Sequence[float], request: PoolRequest) -> list[dict]:
        """One statement after the searches: the graph walk from the seeds merged with the searches'
        hits, each candidate with its scoring row, exact cosine, walk weight (0 when not reached),
        sources, source excerpts (the L2 tier) and whether it shares an S9 community with a top
        hit; then the pinned ``always_load`` memories, flagged (see `candidate_pool_sql`)."""
        return self.db.tenant_read(
            tenant_id,
            (candidate_pool_sql(live_now, as_of=False, hops=request.hops), request.params(tenant_id, query_vector)),
        )

    def settle_vectors(self, tenant_id: str, *, limit: int) -> int:
        """Move up to ``limit`` fresh vectors into the ANN index; return how many moved."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """UPDATE memory_vectors SET indexed = true
                   WHERE tenant_id = %s AND memory_id IN (
                       SELECT memory_id FROM memory_vectors
                       WHERE tenant_id = %s AND searchable AND NOT indexed
                       LIMIT %s FOR UPDATE SKIP LOCKED)""",
                [tenant_id, tenant_id, limit],
            ).rowcount

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
        strength = reinforced(current_strength("m"), d)
        scale = weibull_scale("m.access_count + 1", d)
        with self.db.tenant_tx(tenant_id) as conn:
            if memory_ids:
                conn.execute(
                    f"""UPDATE memories AS m SET
                            strength_anchor = {strength},
                            strength = {strength},
                            band = {band_case(strength, d)},
                            next_transition_at = {
                        next_transition(strength, "now()", "m.decay_rate", strength, d, scale_sql=scale)
                    },
                            decay_scale = {scale},
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

    def get_memory(self, tenant_id: str, memory_id: UUID) -> dict:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                f"""SELECT m.id, m.norm_key, m.label, m.definition, m.type, m.importance, m.strength_anchor,
                           m.strength_anchor_at, m.strength, m.band, m.access_count, m.last_accessed_at,
                           m.tier, m.state, m.provenance, m.base_trust, v.embedder_id, m.decay_rate,
                           m.next_transition_at, m.created_at, m.updated_at, {current_strength("m")} AS strength_now,
                           m.valid_from, m.valid_to, m.recorded_at, m.superseded_at, m.superseded_by,
                           m.always_load, m.protected, m.user_id, m.agent_id, m.run_id, m.tags, m.metadata, m.version
                    FROM memories m
                    LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
                    WHERE m.tenant_id = %s AND m.id = %s""",
                [tenant_id, memory_id],
            ).fetchone()
        if not row:
            raise NotFound(f"memory {memory_id} not found")
        return row


LOCK_TENANT_SQL = """INSERT INTO tenants (tenant_id) VALUES (%s)
    ON CONFLICT (tenant_id) DO UPDATE SET hot_memories = tenants.hot_memories
    RETURNING hot_memories"""


# An admission asks for a label's initials and acronyms three times (lookups, pairing, upsert).
_label_initials = lru_cache(maxsize=4096)(initials)
_label_acronyms = lru_cache(maxsize=4096)(lambda label: tuple(acronyms(label)))


def _nearest_by_candidate(rows: Sequence[dict]) -> dict[int, str]:
    """candidate index → the key of its most similar near duplicate."""
    found: dict[int, tuple[float, str]] = {}
    for row in rows:
        if row["idx"] not in found or row["similarity"] > found[row["idx"]][0]:
            found[row["idx"]] = (row["similarity"], row["norm_key"])
    return {i: key for i, (_, key) in found.items()}


def _candidate_columns(candidates: Sequence[MemoryCandidate]) -> dict[str, list]:
    """The candidates as parallel arrays, for ``unnest`` inserts."""
    return {
        "keys": [c.norm_key for c in candidates],
        "labels": [c.label for c in candidates],
        "defs": [c.definition for c in candidates],
        "types": [c.type for c in candidates],
        "imps": [c.importance for c in candidates],
        "rates": [c.decay_rate for c in candidates],
        "provs": [c.provenance.value for c in candidates],
        "trusts": [c.base_trust for c in candidates],
    }


def _admission_audit(rows: Sequence[dict], actor: str, source: ConceptSource | None) -> list[dict]:
    """One audit row per memory an admission created or merged into, naming its source."""
    match source:
        case DocumentSource():
            details = {"document_id": str(source.document_id)}
        case SessionSource():
            details = {"session_id": source.session_id, "messages": [source.message_from, source.message_to]}
        case _:
            details = {}
    return [
        {"actor": actor, "action": "admitted" if r["inserted"] else "merged", "memory_id": r["id"], "details": details}
        for r in rows
    ]


def _source_texts(
    candidates: Sequence[MemoryCandidate], final_keys: list[str], chosen: list[tuple[int, MemoryCandidate]]
) -> dict[str, str]:
    """By final key, the text its candidates bring beyond the definition the memory row takes: the
    other candidates' definitions and everyone's excerpts, each passage once, in order."""
    row_of = {c.norm_key: i for i, c in chosen}
    parts: dict[str, list[str]] = {}
    for i, (candidate, key) in enumerate(zip(candidates, final_keys, strict=True)):
        mine = parts.setdefault(key, [])
        pieces = candidate.excerpts if row_of.get(key) == i else [candidate.definition, *candidate.excerpts]
        mine.extend(p for p in pieces if p and p not in mine and p != candidates[row_of[key]].definition)
    return {key: "\n".join(texts) for key, texts in parts.items() if texts}


def _one_per_key(candidates: Sequence[MemoryCandidate], final_keys: list[str]) -> list[tuple[int, MemoryCandidate]]:
    """Candidates that ended under one key become one memory row: the most important, then longest.
    Returns (candidate index, the candidate under its final key)."""
    best: dict[str, tuple[int, MemoryCandidate]] = {}
    for i, (candidate, key) in enumerate(zip(candidates, final_keys, strict=True)):
        current = best.get(key)
        if current is None or (candidate.importance, len(candidate.definition)) > (
            current[1].importance,
            len(current[1].definition),
        ):
            best[key] = (i, candidate.model_copy(update={"norm_key": key}))
    return list(best.values())
