"""Governance of what gets in (S7) and the audit chain (S3): the trust gate, the review queue,
manual memories, memory history and ``contextos audit verify``."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, NoReturn
from uuid import UUID

from contextos.cursors import read_sequence_cursor, read_time_id_cursor, sequence_cursor, time_id_cursor
from contextos.decay import decay_rate
from contextos.embedding import Embedder
from contextos.errors import BadRequest, Conflict, Forbidden
from contextos.governance_models import (
    AuditEntry,
    AuditPage,
    ChainProblem,
    ChainReport,
    HeldCandidate,
    MemoryAdmission,
    MemoryCreate,
    MemoryHistory,
    MemoryVersion,
    ReviewItem,
    ReviewOutcome,
    ReviewPage,
)
from contextos.models import MemoryCandidate, Provenance
from contextos.normalization import norm_key
from contextos.observability import metrics
from contextos.ports.admission import AdmissionPort, Promotion
from contextos.ports.governance import ReviewPort
from contextos.redaction import PLACEHOLDER, clean_label, redact
from contextos.services.firewall import Firewall
from contextos.settings import Settings
from contextos.trust import candidate_signals, claim_provenance, gate_trust

GENESIS_HASH = "0" * 64
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass
class TrustGate:
    """S7's trust gate: below the threshold a candidate is held for review and goes nowhere else."""

    settings: Settings

    def split(
        self,
        candidates: Sequence[MemoryCandidate],
        *,
        source_text: str | None = None,
        hold_reason: str | None = None,
    ) -> tuple[list[MemoryCandidate], list[HeldCandidate]]:
        """(admitted, held). A candidate's gate trust is its base trust, less the injection penalty
        scaled by its content signal: its own text, and the source sentences it was drawn from or
        that promote what it names (``contextos.trust``), never the whole source for one sentence."""
        cfg = self.settings.governance
        # Its excerpts are shown in contexts too: they are judged with its definition.
        signals = candidate_signals(
            [(c.label, " ".join([c.definition, *c.excerpts])) for c in candidates], source_text, cfg
        )
        admitted: list[MemoryCandidate] = []
        held: list[HeldCandidate] = []
        for c, signal in zip(candidates, signals, strict=True):
            trust = gate_trust(c.base_trust, list(signal.names), cfg, strength=signal.strength)
            if hold_reason:  # the tenant's firewall policy holds what carried a secret (masked)
                held.append(HeldCandidate(candidate=c, trust=trust, reason=hold_reason, signals=["contains_secret"]))
                continue
            if trust >= cfg.trust_threshold:
                admitted.append(c)
                continue
            why = f"trust {trust:.2f} below {cfg.trust_threshold:.2f} ({c.provenance.value}"
            why += ", instruction-like text)" if signal.names else ")"
            held.append(HeldCandidate(candidate=c, trust=trust, reason=why, signals=list(signal.names)))
        if held:
            metrics.add_metric(name="CandidatesHeld", unit="Count", value=len(held))
        return admitted, held


def firewall_label(label: str, definition: str) -> str:
    """A redacted manual label without its placeholders, or the definition's first words."""
    cleaned = clean_label(label) or clean_label(" ".join(PLACEHOLDER.sub(" ", definition).split()[:6]))
    if cleaned is None:
        raise BadRequest("the label and definition are only secrets or personal data; nothing is left to remember")
    return cleaned


def require_user(kind: str) -> None:
    """Review decisions belong to people: an agent's credential is refused."""
    if kind != "user":
        raise Forbidden("only a user credential can promote or reject a held candidate")


@dataclass
class GovernanceService:
    settings: Settings
    store: AdmissionPort
    governance: ReviewPort
    embedder: Embedder
    firewall: Firewall  # the write firewall (S7), before a manual memory is admitted

    @property
    def trust_gate(self) -> TrustGate:
        return TrustGate(self.settings)

    # -- manual memories -------------------------------------------------------------------
    def create_memory(
        self, tenant_id: str, request: MemoryCreate, *, actor: str, ceiling: Provenance
    ) -> MemoryAdmission:
        """A memory written by hand goes through the same gates as everything else, the write
        firewall first (REST and MCP ``save_memory`` both come here)."""
        cfg = self.settings
        provenance = claim_provenance(request.provenance, ceiling, ceiling, cfg.governance)
        screened = self.firewall.screen(tenant_id, [request.label, request.definition], what="memory", actor=actor)
        if screened.found:
            label, definition = screened.texts
            request = request.model_copy(update={"label": firewall_label(label, definition), "definition": definition})
        modifiers = cfg.extraction.generic_modifiers
        key = norm_key(request.label, modifiers)
        if not key:
            raise BadRequest("the label has no words to key the memory by")
        scope = request.scope()
        key += scope.key_suffix()  # S11: a user's memory merges only within that user's
        candidate = MemoryCandidate(
            norm_key=key,
            label=request.label.strip(),
            definition=request.definition.strip(),
            type=request.type.value,
            importance=request.importance,
            embedding=self.embedder.embed([f"{request.label}: {request.definition}"])[0],
            decay_rate=decay_rate(request.importance, request.type.value, cfg.decay),
            provenance=provenance,
            base_trust=cfg.governance.trust_of(provenance),
        )
        admitted, held = self.trust_gate.split([candidate], hold_reason=screened.hold_reason)
        done = self.store.admit_batch(
            tenant_id, admitted, None, embedder_id=self.embedder.model_id, held=held, actor=actor, scope=scope
        )
        assert done is not None  # only a promotion finds nothing to admit
        if held:
            return MemoryAdmission(
                status="held", review_id=done.review_ids[0], provenance=provenance, trust=held[0].trust
            )
        memory_id = done.result.memory_ids[0]
        links = self.store.links(tenant_id, memory_id, ("supersedes", "corroborates"))
        self.store.settle_vectors(tenant_id, limit=cfg.merge.settle_batch)
        return MemoryAdmission(
            status="merged" if done.result.merged else "admitted",
            memory_id=memory_id,
            provenance=provenance,
            trust=candidate.base_trust,
            superseded=links["supersedes"],
            corroborated=links["corroborates"],
        )

    # -- the review queue ------------------------------------------------------------------
    def review(self, tenant_id: str, *, status: str = "pending", cursor: str | None = None) -> ReviewPage:
        if status not in ("pending", "promoted", "rejected"):
            raise BadRequest("status must be pending, promoted or rejected")
        limit = self.settings.governance.review_page_size
        key = read_time_id_cursor(cursor)
        rows = self.governance.review_page(tenant_id, status=status, after=key, limit=limit)
        items = [
            ReviewItem(
                id=r["id"],
                label=r["candidate"].get("label", ""),
                definition=r["candidate"].get("definition", ""),
                type=r["candidate"].get("type", "fact"),
                provenance=r["provenance"],
                trust=r["trust"],
                reason=r["reason"],
                signals=r["candidate"].get("signals", []),
                document_id=r["document_id"],
                session_id=r["session_id"],
                status=r["status"],
                decided_by=r["decided_by"],
                decided_at=r["decided_at"],
                decision_reason=r["decision_reason"],
                created_at=r["created_at"],
            )
            for r in rows
        ]
        last = rows[-1] if len(rows) == limit else None
        return ReviewPage(items=items, next_cursor=time_id_cursor(last["created_at"], last["id"]) if last else None)

    def promote(self, tenant_id: str, review_id: UUID, *, actor: str, kind: str, reason: str) -> ReviewOutcome:
        """A user vouches for a held candidate: it then runs the normal admission path (merges and
        the contradiction gate), in the same transaction as the decision and its audit row."""
        require_user(kind)
        reason = redact(reason).text  # a decision's reason is audit text: no secret gets in there either
        done = self.store.admit_batch(
            tenant_id,
            [],
            None,
            embedder_id=self.embedder.model_id,
            actor=actor,
            promotion=Promotion(review_id=review_id, actor=actor, reason=reason),
        )
        if done is None:
            self._not_pending(tenant_id, review_id)
        result = done.result
        self.store.settle_vectors(tenant_id, limit=self.settings.merge.settle_batch)
        metrics.add_metric(name="CandidatesPromoted", unit="Count", value=1)
        return ReviewOutcome(id=review_id, status="promoted", memory_ids=result.memory_ids, store=result)

    def reject(self, tenant_id: str, review_id: UUID, *, actor: str, kind: str, reason: str) -> ReviewOutcome:
        """Discard a held candidate for good: it never becomes a memory."""
        require_user(kind)
        reason = redact(reason).text
        if self.governance.decide_alone(tenant_id, review_id, status="rejected", actor=actor, reason=reason) is None:
            self._not_pending(tenant_id, review_id)
        metrics.add_metric(name="CandidatesRejected", unit="Count", value=1)
        return ReviewOutcome(id=review_id, status="rejected")

    def _not_pending(self, tenant_id: str, review_id: UUID) -> NoReturn:
        status = self.governance.review_status(tenant_id, review_id)  # NotFound when it is not there
        raise Conflict(f"review item {review_id} is already {status}")

    # -- history and the audit log ---------------------------------------------------------
    def history(self, tenant_id: str, memory_id: UUID) -> MemoryHistory:
        versions, events = self.governance.history(tenant_id, memory_id)
        return MemoryHistory(
            memory_id=memory_id,
            versions=[MemoryVersion.model_validate(v) for v in versions],
            events=[AuditEntry.model_validate(e) for e in events],
        )

    def audit(self, tenant_id: str, *, cursor: str | None = None, memory_id: UUID | None = None) -> AuditPage:
        limit = self.settings.governance.review_page_size
        after_seq = read_sequence_cursor(cursor) or 0
        rows = self.governance.audit_page(tenant_id, after=after_seq, limit=limit, memory_id=memory_id)
        last = rows[-1] if len(rows) == limit else None
        return AuditPage(
            entries=[AuditEntry.model_validate(r) for r in rows],
            next_cursor=sequence_cursor(last["chain_seq"]) if last else None,
        )

    def verify(self, tenant_id: str) -> ChainReport:
        """Walk a tenant's chain in order and recompute every hash here, independently of the
        database's trigger: an edited, deleted, re-ordered or inserted entry breaks it."""
        page = self.settings.governance.audit_page_size
        problems: list[ChainProblem] = [
            ChainProblem(chain_seq=None, kind="unchained", detail=f"entry seq {r['seq']} has no place in the chain")
            for r in self.governance.unchained(tenant_id)
        ]
        expected, prev_hash, entries, last = 1, GENESIS_HASH, 0, None
        after = 0
        while rows := self.governance.audit_page(tenant_id, after=after, limit=page):
            for row in rows:
                entries += 1
                seq = row["chain_seq"]
                if seq > expected:
                    problems.append(
                        ChainProblem(chain_seq=seq, kind="missing", detail=f"entries {expected}..{seq - 1} are gone")
                    )
                elif row["prev_hash"] != prev_hash:
                    problems.append(
                        ChainProblem(
                            chain_seq=seq, kind="reordered", detail="does not follow the entry before it in the chain"
                        )
                    )
                if entry_hash(row) != row["hash"]:
                    problems.append(ChainProblem(chain_seq=seq, kind="edited", detail="its content does not match"))
                expected, prev_hash, last = seq + 1, row["hash"], row
            after = rows[-1]["chain_seq"]
        head = self.governance.audit_head(tenant_id)
        tail = (last["chain_seq"], last["hash"]) if last else None
        if head is not None and tail != (head["chain_seq"], head["hash"]):
            problems.append(
                ChainProblem(
                    chain_seq=head["chain_seq"],
                    kind="head_mismatch",
                    detail=f"the chain's head is entry {head['chain_seq']}, the last entry found is "
                    f"{last['chain_seq'] if last else 'none'}",
                )
            )
        return ChainReport(
            tenant_id=tenant_id,
            entries=entries,
            ok=not problems,
            head_seq=head["chain_seq"] if head else None,
            problems=problems,
        )

    def verify_all(self, tenant_ids: Sequence[str] | None = None) -> list[ChainReport]:
        return [self.verify(t) for t in (tenant_ids or self.governance.audit_tenants())]


def canonical_entry(row: Mapping[str, Any]) -> str:
    """The text migration 0011's ``audit_log_canonical`` hashes, rebuilt from stored columns."""
    at: datetime = row["at"]
    micros = (at - _EPOCH) // timedelta(microseconds=1)
    fields = [
        row["prev_hash"],
        row["tenant_id"],
        str(row["chain_seq"]),
        str(row["id"]),
        str(micros),
        row["actor"],
        row["action"],
        str(row["memory_id"]) if row["memory_id"] is not None else None,
        row["reason"],
        row["details_text"],
    ]
    return "|".join("~" if f is None else f"{len(f.encode('utf-8'))}:{f}" for f in fields)


def entry_hash(row: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonical_entry(row).encode("utf-8")).hexdigest()
