"""The admission store (S4 step 7): the one transaction in which candidates become memories, for any
source — a document, a conversation flush, a manual memory, a promotion.

Under the tenant's row lock: the merge lookups (``merge_lookups``), the plan (pure,
``contextos.merge_plan``), the contradiction gate's outcome (S7), then the writes
(``admission_writes``) and the source's own bookkeeping, in one pipelined round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import numpy as np
from contextos.config import DecaySettings, MergeSettings
from contextos.faults import crash_point
from contextos.gate_port import ContradictionGatePort
from contextos.governance_models import HeldCandidate
from contextos.judgements import GateOutcome, JudgementCache
from contextos.lsh import sketch
from contextos.merge_plan import (
    GateCounts,
    admission_counts,
    one_per_key,
    related_pairs,
    source_texts,
    store_result,
)
from contextos.models import MemoryCandidate, Provenance, StoreResult
from contextos.scopes import Scope
from contextos.sources import ConceptSource, DocumentSource, SessionSource
from contextos.store.admission_writes import AdmissionWrites, admission_audit
from contextos.store.audit import write_audit
from contextos.store.batch import StatementBatch, Writes
from contextos.store.contradictions import close_superseded, insert_subject_terms, link
from contextos.store.db import Conn, Database
from contextos.store.governance import GovernanceStore
from contextos.store.merge_lookups import MergeLookups
from contextos.store.promotion import Promotion, decide_promotion
from contextos.store.relationships import outgoing
from contextos.store.scopes import apply_scope, inherit_document_scope, inherit_session_scope, source_scope
from pgvector import Vector
from psycopg.types.json import Jsonb


@dataclass
class Admitted:
    """An admission's result, the counts recorded with its source, and the review items it held."""

    result: StoreResult
    counts: dict[str, Any] = field(default_factory=dict)
    review_ids: list[UUID] = field(default_factory=list)


@dataclass(frozen=True)
class DocumentAdmission:
    """One document's part of a batched admission: its candidates, the trust gate's held ones, and
    the document itself (its counts already joined)."""

    candidates: Sequence[MemoryCandidate]
    source: DocumentSource
    held: Sequence[HeldCandidate] = ()


class AdmissionStore(MergeLookups, AdmissionWrites):
    def __init__(
        self,
        db: Database,
        decay: DecaySettings,
        merge: MergeSettings | None = None,
        gate: ContradictionGatePort | None = None,
    ) -> None:
        self.db = db
        self.decay = decay
        self.merge = merge or MergeSettings()
        self.gate = gate  # the S7 contradiction gate; None admits without judging (benchmarks, tests)

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
        source: ConceptSource | None,
        *,
        embedder_id: str,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
        scope: Scope | None = None,
    ) -> StoreResult:
        """``admit_batch``'s result."""
        admitted = self.admit_batch(
            tenant_id, candidates, source, embedder_id=embedder_id, held=held, actor=actor, scope=scope
        )
        assert admitted is not None  # only a promotion finds nothing to admit
        return admitted.result

    def admit_batch(
        self,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        source: ConceptSource | None,
        *,
        embedder_id: str,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
        scope: Scope | None = None,
        promotion: Promotion | None = None,
    ) -> Admitted | None:
        """Admit ``candidates`` and finish the source (a document's status and counts, or a
        conversation flush) in one transaction under the tenant's row lock: the merge and
        contradiction decisions that look at existing memories cannot race a concurrent ingest,
        and the upserts make a crash or a redelivery leave nothing half-written. A conversation
        range already stored (a redelivered job racing its first run) writes nothing.

        The one way into memories, for every source: ``source`` None is a manual memory, whose
        ``scope`` (S11) its memories and held candidates keep; a ``promotion`` decides a held
        candidate first and admits it in the same transaction (None when it is not pending).
        """
        prejudged = self.prejudge(tenant_id, candidates)  # governance (S7): slow judging off the lock
        with self.db.tenant_tx(tenant_id) as conn:
            if isinstance(source, SessionSource) and self._flush_done(conn, tenant_id, source):
                return Admitted(StoreResult(already_stored=True))
            finish: Callable[[Any, dict[str, Any]], None] | None = None
            if promotion is not None:
                decided = decide_promotion(conn, tenant_id, promotion)
                if decided is None:
                    return None
                candidates, source, scope = [decided.candidate], decided.source, decided.scope
            elif source is not None:
                finish = self._finisher(tenant_id, source)
            admitted = self._admit(
                conn,
                tenant_id,
                candidates,
                embedder_id=embedder_id,
                source=source,
                held=held,
                actor=actor,
                prejudged=prejudged,
                finish=finish,
                scope=scope,
            )
            if scope is not None:
                apply_scope(conn, tenant_id, admitted.result.memory_ids, scope)
            crash_point("store:before_commit")
        crash_point("store:after_commit")
        return admitted

    def admit_documents(
        self, tenant_id: str, documents: Sequence[DocumentAdmission], *, embedder_id: str, actor: str = "ingest"
    ) -> list[StoreResult]:
        """Several documents of one tenant (an ingest queue batch) in one transaction under one tenant
        lock and one commit: each admitted in order exactly as ``admit_batch`` would admit it alone
        (its lookups see the documents before it, as they would have after their commits), each
        finishing its own document. All or nothing: when one fails nothing is written, and the
        caller admits them one by one so that one bad document never costs the others."""
        prejudged = [self.prejudge(tenant_id, d.candidates) for d in documents]
        created_here: set[UUID] = set()
        with self.db.tenant_tx(tenant_id) as conn:
            results = [
                self._admit(
                    conn,
                    tenant_id,
                    d.candidates,
                    embedder_id=embedder_id,
                    source=d.source,
                    held=d.held,
                    actor=actor,
                    prejudged=cache,
                    finish=self._finisher(tenant_id, d.source),
                    created_here=created_here,
                ).result
                for d, cache in zip(documents, prejudged, strict=True)
            ]
            crash_point("store:before_commit")
        crash_point("store:after_commit")
        return results

    def source_owner(self, tenant_id: str, document_id: UUID | None, session_id: str | None) -> Scope:
        """The scope a document or a session was written with: whose memories its concepts become (S11)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return source_scope(conn, tenant_id, document_id, session_id)

    def _finisher(self, tenant_id: str, source: ConceptSource) -> Callable[[Any, dict[str, Any]], None]:
        """The source's bookkeeping with the admission's counts joined to its own."""
        return lambda conn, counts: self._finish_source(conn, tenant_id, source, source.counts | counts)

    @staticmethod
    def _flush_done(conn: Conn, tenant_id: str, source: SessionSource) -> bool:
        row = conn.execute(
            """SELECT status FROM conversation_flushes
               WHERE tenant_id = %s AND session_id = %s AND message_from = %s FOR UPDATE""",
            [tenant_id, source.session_id, source.message_from],
        ).fetchone()
        return row is not None and row["status"] == "done"

    @staticmethod
    def _finish_source(conn: Writes, tenant_id: str, source: ConceptSource, counts: dict[str, Any]) -> None:
        """The source's own bookkeeping, in the memories' transaction: its status and counts, and
        its scope passed to the memories it taught (S11), so no crash leaves them unscoped."""
        match source:
            case DocumentSource():
                inherit_document_scope(conn, tenant_id, source.document_id)
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
                inherit_session_scope(conn, tenant_id, source.session_id)
                conn.execute(
                    """UPDATE conversation_flushes SET status = 'done', error = NULL, counts = %s, updated_at = now()
                       WHERE tenant_id = %s AND session_id = %s AND message_from = %s""",
                    [Jsonb(counts), tenant_id, source.session_id, source.message_from],
                )

    def admit(
        self,
        conn: Conn,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        embedder_id: str,
        source: ConceptSource | None = None,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
        prejudged: JudgementCache | None = None,
    ) -> tuple[StoreResult, dict[str, Any]]:
        """``_admit`` inside the caller's transaction: the result and its counts."""
        admitted = self._admit(
            conn,
            tenant_id,
            candidates,
            embedder_id=embedder_id,
            source=source,
            held=held,
            actor=actor,
            prejudged=prejudged,
        )
        return admitted.result, admitted.counts

    def _admit(
        self,
        conn: Conn,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        embedder_id: str,
        source: ConceptSource | None = None,
        held: Sequence[HeldCandidate] = (),
        actor: str = "ingest",
        prejudged: JudgementCache | None = None,
        finish: Callable[[Any, dict[str, Any]], None] | None = None,
        scope: Scope | None = None,
        created_here: set[UUID] | None = None,
    ) -> Admitted:
        """S4 step 7 inside the caller's transaction, for any source (None: a manual memory or a
        promotion): the tenant lock, merges, the contradiction gate (S7), upserts, items, edges
        and audit rows. Held candidates (the trust gate's) go to the review queue only. Returns
        the result and its counts. ``finish(conn, counts)`` runs last, with the final writes (one
        round trip): the source's own bookkeeping. ``created_here`` collects the memories created in this
        transaction across calls (a batch of documents): one of them merged into later is a merge."""
        # Each embedding crosses into numpy once: the LSH sketch and the vectors sent to SQL share it.
        matrix = np.asarray([c.embedding for c in candidates], dtype=np.float32)
        lsh = sketch(matrix)
        vectors = [Vector(row) for row in matrix]
        hot, plan = self._lock_and_find_merge_targets(conn, tenant_id, candidates, lsh, vectors)
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
            scope=scope if source is None else None,
        )
        # -- governance (S7): the contradiction gate, under the tenant lock ------------------------
        gate = (
            self.gate.judge_batch(
                conn,
                tenant_id,
                candidates,
                plan.final_keys,
                hot_memories=hot,
                dialect=self.db.dialect.name,
                cache=prejudged,
            )
            if self.gate
            else GateOutcome()
        )
        plan = plan.stand_alone(gate.supersedes, gate.keys)
        final_keys = plan.final_keys
        close_superseded(conn, tenant_id, gate)
        chosen = one_per_key(candidates, final_keys)
        memories = [memory for _, memory in chosen]
        memory_sketches = {memory.norm_key: (lsh.signatures[i], lsh.band_keys[i], vectors[i]) for i, memory in chosen}
        texts = source_texts(candidates, final_keys, chosen)
        rows = self._upsert_memories(conn, tenant_id, memories, texts) if memories else []
        if created_here is not None:  # the upsert tells a fresh row by its creation time, shared by the transaction
            rows = [r | {"inserted": False} if r["inserted"] and r["id"] in created_here else r for r in rows]
            created_here.update(r["id"] for r in rows if r["inserted"])
        ids = {r["norm_key"]: r["id"] for r in rows}
        pairs = related_pairs(candidates, final_keys, ids)
        result = store_result(candidates, rows, len(pairs))
        created = result.created
        admitted_counts = admission_counts(
            result,
            plan,
            len(review_ids),
            GateCounts(
                judged=gate.judged,
                judged_under_lock=gate.judged_under_lock,
                judge_failures=gate.judge_failures,
                superseded=len(gate.superseded_ids),
                corroborated=sum(len(v) for v in gate.corroborates.values()),
            ),
        )
        # Nothing below reads a result: one pipelined round trip, and on PostgreSQL the independent
        # writes, the source's own update included, go as one statement (contextos.store.batch).
        with conn.pipeline():
            writes = StatementBatch(conn, combine=self.db.dialect.name == "postgres")
            self._write_vectors(writes, tenant_id, memories, rows, embedder_id, memory_sketches)
            if self.db.dialect.name == "postgres":
                fresh = [r for r in rows if r["inserted"]]
                insert_subject_terms(
                    writes,
                    tenant_id,
                    [r["id"] for r in fresh],
                    [r["norm_key"] for r in fresh],
                    [memory_sketches[r["norm_key"]][1] for r in fresh],
                )
            self._insert_items(writes, tenant_id, source, candidates, final_keys, ids)
            self._upsert_related_edges(writes, tenant_id, pairs, {r["id"] for r in rows if r["inserted"]})
            if created:
                writes.execute(
                    "UPDATE tenants SET hot_memories = hot_memories + %s WHERE tenant_id = %s",
                    [created, tenant_id],
                )
            if self.gate:
                writes.flush()
                link(conn, tenant_id, gate, [ids[k] for k in final_keys], actor=actor)
            write_audit(writes, tenant_id, admission_audit(rows, actor, source))
            if finish:
                finish(writes, admitted_counts)
            writes.flush()
        return Admitted(result, admitted_counts, review_ids)

    def links(self, tenant_id: str, memory_id: UUID, types: Sequence[str]) -> dict[str, list[UUID]]:
        """The edges an admitted memory points along, by type (what a manual write answers with)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return outgoing(conn, tenant_id, memory_id, types)

    def prejudge(self, tenant_id: str, candidates: Sequence[MemoryCandidate]) -> JudgementCache | None:
        """Run the contradiction gate's judge before the admission transaction (see ContradictionGate)."""
        if not (self.gate and self.gate.prejudges and candidates):
            return None
        return self.gate.prejudge(self.db, tenant_id, candidates)

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
