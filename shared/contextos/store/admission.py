"""The admission store (S4 step 7): the one transaction in which candidates become memories, for any
source — a document, a conversation flush, a manual memory, a promotion.

Under the tenant's row lock: the merge lookups (``merge_lookups``), the plan (pure,
``contextos.merge_plan``), the contradiction gate's outcome (S7), then the writes
(``admission_writes``) and the source's own bookkeeping, in one pipelined round trip.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

import numpy as np
from contextos.config import DecaySettings, MergeSettings
from contextos.faults import crash_point
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
from contextos.normalization import is_verbatim_key
from contextos.ports.admission import (
    Admitted,
    DocumentAdmission,
    FileOutcome,
    GivenMemory,
    Promotion,
    WorkspaceBatch,
)
from contextos.ports.gate import ContradictionGatePort
from contextos.scopes import Scope
from contextos.sources import ConceptSource, DocumentSource, SessionSource
from contextos.store import given
from contextos.store.admission_writes import AdmissionWrites, admission_audit, admitted_vectors
from contextos.store.audit import write_audit
from contextos.store.batch import StatementBatch, Writes
from contextos.store.contradictions import (
    TransactionGateReads,
    close_superseded,
    hot_count,
    insert_subject_terms,
    link,
)
from contextos.store.db import Conn, Database
from contextos.store.governance import GovernanceStore
from contextos.store.locks import lock_tenant
from contextos.store.memory_changes import MemoryChanges
from contextos.store.merge_lookups import MergeLookups
from contextos.store.promotion import decide_promotion
from contextos.store.relationships import outgoing
from contextos.store.scopes import apply_scope, inherit_document_scope, inherit_session_scope, source_scope
from pgvector import Vector
from psycopg.types.json import Jsonb


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
        review_ids = self._hold(conn, tenant_id, held, actor=actor, source=source, scope=scope)
        gate = self._judge(conn, tenant_id, candidates, plan.final_keys, hot=hot, prejudged=prejudged)
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
        admitted_counts = admission_counts(result, plan, len(review_ids), gate_counts(gate))
        # Nothing below reads a result: one pipelined round trip, and on PostgreSQL the independent
        # writes, the source's own update included, go as one statement (contextos.store.batch).
        with conn.pipeline():
            writes = StatementBatch(conn, combine=self.db.dialect.combines_statements())
            fresh = [r for r in rows if r["inserted"]]
            self.write_vectors(writes, tenant_id, admitted_vectors(memories, rows, memory_sketches), embedder_id)
            self._insert_subject_terms(writes, tenant_id, fresh, [memory_sketches[r["norm_key"]][1] for r in fresh])
            self._insert_items(writes, tenant_id, source, candidates, final_keys, ids)
            self._upsert_related_edges(writes, tenant_id, pairs, {r["id"] for r in fresh})
            self._count_hot(writes, tenant_id, result.created)
            if self.gate:
                writes.flush()
                link(conn, tenant_id, gate, [ids[k] for k in final_keys], actor=actor)
            write_audit(writes, tenant_id, admission_audit(rows, actor, source))
            if finish:
                finish(writes, admitted_counts)
            writes.flush()
        return Admitted(result, admitted_counts, review_ids)

    @staticmethod
    def _hold(
        conn: Conn,
        tenant_id: str,
        held: Sequence[HeldCandidate],
        *,
        actor: str,
        source: ConceptSource | None = None,
        scope: Scope | None = None,
    ) -> list[UUID]:
        """Governance (S7): held candidates land in the review queue and nowhere else, pointing at
        their source (a manual write keeps its own scope)."""
        return GovernanceStore.hold(
            conn,
            tenant_id,
            held,
            actor=actor,
            document_id=source.document_id if isinstance(source, DocumentSource) else None,
            session_id=source.session_id if isinstance(source, SessionSource) else None,
            messages=(source.message_from, source.message_to) if isinstance(source, SessionSource) else None,
            scope=scope if source is None else None,
        )

    def _judge(
        self,
        conn: Conn,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        *,
        hot: int,
        prejudged: JudgementCache | None = None,
    ) -> GateOutcome:
        """Governance (S7): the contradiction gate, under the tenant lock, in this transaction."""
        if not self.gate:
            return GateOutcome()
        reads = TransactionGateReads(conn, tenant_id, self.db.dialect)
        return self.gate.judge_batch(reads, candidates, final_keys, hot_memories=hot, cache=prejudged)

    def _insert_subject_terms(
        self, writes: Writes, tenant_id: str, fresh: Sequence[dict[str, Any]], band_keys: Sequence[Sequence[int]]
    ) -> None:
        """The subject terms of new live memories, where the engine keeps them (the gate's index)."""
        if self.db.dialect.keeps_subject_terms():
            # a kept turn is never judged (S8), so it needs no subject terms
            judged = [(r, b) for r, b in zip(fresh, band_keys, strict=True) if not is_verbatim_key(r["norm_key"])]
            insert_subject_terms(
                writes,
                tenant_id,
                [r["id"] for r, _ in judged],
                [r["norm_key"] for r, _ in judged],
                [b for _, b in judged],
            )

    @staticmethod
    def _count_hot(writes: Writes, tenant_id: str, created: int) -> None:
        if created:
            writes.execute(
                "UPDATE tenants SET hot_memories = hot_memories + %s WHERE tenant_id = %s", [created, tenant_id]
            )

    # -- a workspace batch (S10) ----------------------------------------------------------------
    def admit_workspace(
        self, tenant_id: str, batch: WorkspaceBatch, *, embedder_id: str, actor: str
    ) -> tuple[list[FileOutcome], list[FileOutcome]]:
        """Edits by id, then memories as given, in one transaction under the tenant lock, through the
        same review queue, contradiction gate and writers as every admission (``contextos.store.given``)."""
        with self.db.tenant_tx(tenant_id) as conn:
            hot = lock_tenant(conn, tenant_id)
            changes = MemoryChanges(conn, tenant_id, self.db.dialect)
            edited = [given.apply_edit(changes, e, embedder_id=embedder_id, actor=actor) for e in batch.edits]
            refused = given.refusals(conn, changes, batch.memories) if batch.memories else {}
            kept = [g for g in batch.memories if g.id not in refused]
            holds = [g for g in kept if g.held is not None]
            review_ids = self._hold(conn, tenant_id, [g.held for g in holds if g.held is not None], actor=actor)
            outcomes = refused | {
                g.id: FileOutcome("held", g.id, review_id=r) for g, r in zip(holds, review_ids, strict=True)
            }
            going = [g for g in kept if g.held is None]
            if going:
                self._write_given(
                    conn, tenant_id, going, batch.document_id, hot=hot, embedder_id=embedder_id, actor=actor
                )
            outcomes |= {g.id: FileOutcome("created", g.id) for g in going}
        return edited, [outcomes[g.id] for g in batch.memories]

    def _write_given(
        self,
        conn: Conn,
        tenant_id: str,
        going: Sequence[GivenMemory],
        document_id: UUID | None,
        *,
        hot: int,
        embedder_id: str,
        actor: str,
    ) -> None:
        """Given memories in: the contradiction gate judges the live ones against the tenant's (S7),
        then the one memory writer, their vectors, subject terms, occurrences, counts, audit rows,
        the gate's links and the files' own edges."""
        live = [g for g in going if g.live]
        candidates = [g.candidate for g in live]
        gate = self._judge(conn, tenant_id, candidates, [c.norm_key for c in candidates], hot=hot) if hot else None
        if gate is not None:
            close_superseded(conn, tenant_id, gate)
        self._insert_given(conn, tenant_id, going)
        vectors, band_keys = given.given_vectors(going)
        self.write_vectors(conn, tenant_id, vectors, embedder_id)
        fresh = [{"id": g.id, "norm_key": g.candidate.norm_key} for g in going]
        self._insert_subject_terms(
            conn,
            tenant_id,
            [f for f, g in zip(fresh, going, strict=True) if g.live],
            [k for k, g in zip(band_keys, going, strict=True) if g.live],
        )
        given.insert_sources(conn, tenant_id, going, document_id)
        given.record_admitted(conn, tenant_id, going, actor=actor)
        if gate is not None and self.gate:
            link(conn, tenant_id, gate, [g.id for g in live], actor=actor)
        given.insert_edges(conn, tenant_id, going)

    def links(self, tenant_id: str, memory_id: UUID, types: Sequence[str]) -> dict[str, list[UUID]]:
        """The edges an admitted memory points along, by type (what a manual write answers with)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return outgoing(conn, tenant_id, memory_id, types)

    def prejudge(self, tenant_id: str, candidates: Sequence[MemoryCandidate]) -> JudgementCache | None:
        """The contradiction gate's judgements before the admission transaction: the neighbours as
        they are now, read in a short transaction of their own, judged off the lock."""
        gate = self.gate
        if not (gate and gate.prejudges and candidates):
            return None
        with self.db.tenant_tx(tenant_id) as conn:
            hot = hot_count(conn, tenant_id)
            if not hot:
                return {}
            found = TransactionGateReads(conn, tenant_id, self.db.dialect).neighbours(
                candidates, [c.norm_key for c in candidates], hot, gate.settings, gate.floors(candidates)
            )
        return gate.prejudge(candidates, found)

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


def gate_counts(gate: GateOutcome) -> GateCounts:
    """What an admission's counts say of its contradiction gate."""
    return GateCounts(
        judged=gate.judged,
        judged_under_lock=gate.judged_under_lock,
        judge_failures=gate.judge_failures,
        superseded=len(gate.superseded_ids),
        corroborated=sum(len(v) for v in gate.corroborates.values()),
    )
