"""Conversation memory (S8): buffer turns at chat time, flush ranges exactly once, distil them.

Chat-time calls (append, read, end) only write the buffer; extraction happens in the
conversation function. A flush is claimed in the database first (the session's row lock decides
between racing triggers) and then sent to the queue; a claim whose send failed stays ``pending``
and the sweeper sends it again, so a range is never lost and never distilled twice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from pydantic import Field

from contextos.conversations import (
    FlushJob,
    FlushTrigger,
    FlushView,
    MessageAppended,
    MessageCreate,
    SessionCounts,
    SessionListItem,
    SessionListQuery,
    SessionMemories,
    SessionPage,
    SessionView,
    Turn,
    TurnConcept,
    check_occurred_at,
    check_session_id,
    keep_every_turn,
    message_provenance,
    said_at,
    speaker_provenance,
)
from contextos.errors import PayloadTooLarge, PermanentError, TransientError
from contextos.extraction import ConceptExtractor
from contextos.extraction.validation import rejection_reason
from contextos.faults import crash_point
from contextos.jobs import ClaimLedger, JobQueue, run_claimed
from contextos.modelbase import BaseModel
from contextos.models import BASE_TRUST, Provenance
from contextos.normalization import estimate_tokens
from contextos.observability import logger, metrics
from contextos.ports.rows import FlushRow
from contextos.ports.sessions import ConversationPort
from contextos.redaction import PLACEHOLDER, RedactionPolicy
from contextos.scopes import Scope
from contextos.services.admission import Admission
from contextos.services.document_pipeline import deduplicate
from contextos.services.firewall import HOLD_REASON, Firewall
from contextos.settings import Settings
from contextos.sources import SessionSource


class SweepReport(BaseModel):
    tenants: int = 0
    claimed: int = 0  # idle sessions whose unflushed range was claimed now
    resent: int = 0  # claims found unsent (or sent long ago and never taken) and sent again
    sent: int = 0
    send_failures: int = 0  # left pending for the next sweep
    flushes: list[dict] = Field(default_factory=list)


@dataclass
class ConversationService:
    settings: Settings
    store: ConversationPort
    tenant_ids: Callable[[], list[str]]
    firewall: Firewall  # the write firewall (S7), before a turn is buffered
    queue: JobQueue | None = None
    # Factories, so chat-time users (the API, the sweeper) never build a model they do not use.
    extractor: Callable[[], ConceptExtractor] | None = None
    admission: Callable[[], Admission] | None = None

    # -- chat time -------------------------------------------------------------------------
    def append(self, tenant_id: str, ceiling: Provenance, session_id: str, message: MessageCreate) -> MessageAppended:
        """Buffer one turn (one statement); crossing the size threshold claims and sends a flush."""
        cfg = self.settings.conversation
        check_session_id(session_id, cfg.max_session_id_chars)
        if len(message.content) > cfg.max_message_chars:
            raise PayloadTooLarge(
                f"the message is {len(message.content)} characters; the limit is {cfg.max_message_chars}"
            )
        provenance = message_provenance(message.role, message.provenance, ceiling)
        if message.occurred_at is not None:
            check_occurred_at(message.occurred_at, cfg.occurred_at_skew_s, cfg.occurred_at_max_age_days)
        # The write firewall before the turn buffer (S7): under ``reject`` this refuses the turn.
        screened = self.firewall.screen(tenant_id, [message.content], what="turn", session_id=session_id)
        row = self.store.append(
            tenant_id,
            session_id,
            role=message.role.value,
            content=screened.texts[0],
            provenance=provenance.value,
            occurred_at=message.occurred_at,
        )
        scope = Scope(user_id=message.user_id, agent_id=message.agent_id, run_id=message.run_id, tags=message.tags)
        if not scope.empty:
            self.store.set_session_scope(tenant_id, session_id, scope)
        flush = None
        if row["message_count"] - row["flushed_through"] >= cfg.flush_messages:
            claimed = self.store.claim_flush(
                tenant_id, session_id, FlushTrigger.size.value, min_unflushed=cfg.flush_messages
            )
            flush = self._send(tenant_id, claimed) if claimed else None
        metrics.add_metric(name="MessagesAppended", unit="Count", value=1)
        return MessageAppended(
            session_id=session_id,
            seq=row["seq"],
            provenance=provenance,
            message_count=row["message_count"],
            flushed_through=flush.message_to if flush else row["flushed_through"],
            flush=flush,
        )

    def get(self, tenant_id: str, session_id: str) -> SessionView:
        check_session_id(session_id, self.settings.conversation.max_session_id_chars)
        return SessionView.model_validate(self.store.get_session(tenant_id, session_id))

    def list_sessions(self, tenant_id: str, query: SessionListQuery) -> SessionPage:
        """The tenant's sessions, newest first, with status and what their flushes produced."""
        rows, cursor = self.store.list_sessions(tenant_id, status=query.status, limit=query.limit, cursor=query.cursor)
        counted = set(SessionCounts.model_fields)
        sessions = [
            SessionListItem.model_validate(
                {k: v for k, v in row.items() if k not in counted} | {"counts": {k: row.get(k) for k in counted}}
            )
            for row in rows
        ]
        return SessionPage(sessions=sessions, next_cursor=cursor)

    def taught(self, tenant_id: str, session_id: str) -> SessionMemories:
        """What a session taught so far: the memories its flushes created or merged into, and what they held."""
        check_session_id(session_id, self.settings.conversation.max_session_id_chars)
        return SessionMemories.model_validate(self.store.taught(tenant_id, session_id))

    def end(self, tenant_id: str, session_id: str) -> SessionView:
        """End the session and flush what is unflushed. Ending twice changes nothing."""
        check_session_id(session_id, self.settings.conversation.max_session_id_chars)
        claimed = self.store.claim_flush(tenant_id, session_id, FlushTrigger.end.value)
        if claimed:
            self._send(tenant_id, claimed)
        return self.get(tenant_id, session_id)

    def recent_turns(self, tenant_id: str, session_id: str) -> list[str]:
        """The last turns of a session, for query analysis (never stored as memories)."""
        cfg = self.settings.conversation
        rows = self.store.recent_turns(tenant_id, session_id, cfg.recent_turns)
        return [r["content"][: cfg.recent_turn_chars] for r in rows]

    # -- the sweeper -----------------------------------------------------------------------
    def sweep(self) -> SweepReport:
        """Flush every session idle past the threshold, and send claims whose send was lost.

        Safe to run twice at once: claims skip locked sessions and a claimed range is claimed once.
        """
        cfg = self.settings.conversation
        report = SweepReport()
        for tenant_id in self.tenant_ids():
            report.tenants += 1
            while True:
                claimed = self.store.claim_idle(tenant_id, idle_s=cfg.idle_flush_s, limit=cfg.sweep_batch)
                report.claimed += len(claimed)
                self._send_all(tenant_id, claimed, report)
                if len(claimed) < cfg.sweep_batch:
                    break
            unsent = self.store.unsent_flushes(
                tenant_id, older_than_s=cfg.resend_after_s, requeue_after_s=cfg.requeue_after_s, limit=cfg.sweep_batch
            )
            report.resent += len(unsent)
            self._send_all(tenant_id, unsent, report)
        metrics.add_metric(name="SessionsFlushedIdle", unit="Count", value=report.claimed)
        logger.info("session sweep finished", extra=report.model_dump(exclude={"flushes"}))
        return report

    def _send_all(self, tenant_id: str, flushes: list[FlushRow], report: SweepReport) -> None:
        """Send many claimed ranges (batched where the queue can) and mark the sent ones in one statement."""
        if not flushes:
            return
        if self.queue is None:
            raise RuntimeError("CONTEXTOS_CONVERSATION_QUEUE_URL is not set")
        jobs = [self._job(tenant_id, f).model_dump(mode="json") for f in flushes]
        send_many = getattr(self.queue, "send_many", None)
        if send_many is not None:
            accepted = send_many(jobs)
        else:
            accepted = []
            for job in jobs:
                try:
                    self.queue.send(job)
                    accepted.append(True)
                except TransientError:
                    accepted.append(False)
        self.store.mark_enqueued_many(
            tenant_id, [(f["session_id"], f["message_from"]) for f, ok in zip(flushes, accepted, strict=True) if ok]
        )
        sent = sum(accepted)
        report.sent += sent
        report.send_failures += len(flushes) - sent
        report.flushes += [
            FlushView.model_validate(f)
            .model_copy(update={"status": "queued" if ok else f["status"]})
            .model_dump(mode="json")
            for f, ok in zip(flushes, accepted, strict=True)
        ]
        if sent < len(flushes):
            logger.warning("flushes not sent; the next sweep sends them", extra={"unsent": len(flushes) - sent})
        metrics.add_metric(name="FlushesQueued", unit="Count", value=sent)

    @staticmethod
    def _job(tenant_id: str, flush: FlushRow) -> FlushJob:
        return FlushJob(
            tenant_id=tenant_id,
            session_id=flush["session_id"],
            message_from=flush["message_from"],
            message_to=flush["message_to"],
        )

    def _send(self, tenant_id: str, flush: FlushRow) -> FlushView:
        """Put one claimed range on the conversation queue; a failed send stays pending for the sweeper."""
        view = FlushView.model_validate(flush)
        if self.queue is None:
            raise RuntimeError("CONTEXTOS_CONVERSATION_QUEUE_URL is not set")
        job = self._job(tenant_id, flush)
        try:
            self.queue.send(job.model_dump(mode="json"))
        except TransientError:
            logger.warning("flush not sent; the sweeper will send it", extra={"session_id": job.session_id})
            metrics.add_metric(name="FlushSendFailures", unit="Count", value=1)
            return view
        self.store.mark_enqueued(tenant_id, job.session_id, job.message_from)
        metrics.add_metric(name="FlushesQueued", unit="Count", value=1)
        return view.model_copy(update={"status": "queued"})

    # -- the conversation function ---------------------------------------------------------
    def handle_message(self, job: FlushJob) -> None:
        self.process(job)

    def process(self, job: FlushJob) -> None:
        """Distil one flushed range. A done range is a no-op; permanent problems end as ``failed``."""
        cfg = self.settings.conversation
        tenant_id, session_id, first = job.tenant_id, job.session_id, job.message_from
        claimed = self.store.claim_job(tenant_id, session_id, first, stale_after_s=cfg.stale_processing_s)
        ledger = ClaimLedger(
            noun="flush",
            log_extra={"session_id": session_id, "message_from": first},
            failed_metric="FlushesFailed",
            max_attempts=cfg.max_attempts,
            fail=lambda reason: self.store.fail_job(tenant_id, session_id, first, reason),
            release=lambda reason: self.store.release_job(tenant_id, session_id, first, reason),
        )
        run_claimed(claimed, lambda job: self._run(tenant_id, session_id, first, job["message_to"]), ledger)

    def _run(self, tenant_id: str, session_id: str, first: int, last: int) -> None:
        if self.extractor is None or self.admission is None:
            raise RuntimeError("the conversation service was built without an extractor and admission")
        cfg = self.settings.conversation
        turns = [Turn.model_validate(r) for r in self.store.turns(tenant_id, session_id, first, last)]
        spoken = [t for t in turns if t.role.value in cfg.extract_roles]
        extracted, calls = self._extract(spoken) if spoken else ([], 0)
        crash_point("flush:after_extraction")
        concepts, deduplicated = deduplicate(extracted, self.settings.extraction.generic_modifiers)
        min_chars = self.settings.extraction.min_definition_chars
        clamped = self._clamp(concepts)
        pointing, kept = keep_every_turn(
            clamped,
            spoken,
            session_id=session_id,
            acceptable=lambda c: rejection_reason(c, min_definition_chars=min_chars) is None,
            min_words=cfg.turn_min_words,
            hub_turns=cfg.hub_turns,
            follows_chars=cfg.follows_chars,
        )
        by_seq = {t.seq: t for t in spoken}
        fallback = min((t.provenance for t in spoken), key=BASE_TRUST.__getitem__, default=Provenance.agent_turn)
        flushed_at = max((t.said_at for t in spoken if t.said_at is not None), default=None)
        chosen = [*pointing, *kept]
        for concept in chosen:
            concept.provenance = speaker_provenance(concept, by_seq, fallback)  # a kept turn: its speaker's
            concept.said_at = said_at(concept, by_seq, flushed_at)
        source = SessionSource(
            session_id=session_id,
            message_from=first,
            message_to=last,
            provenance=fallback,
            counts={
                "turns": len(turns),
                "turns_extracted": len(spoken),
                "extraction_calls": calls,
                "extracted": len(extracted),
                "deduplicated": deduplicated,
                "clamped": len(concepts) - len(clamped),
                "turns_kept": len(kept),
                "by_provenance": _count_by(c.provenance.value for c in chosen if c.provenance),
            },
        )
        # Under ``hold``, what a flush drew from a redacted turn waits in the review queue.
        redacted = any(PLACEHOLDER.search(t.content) for t in spoken)
        hold = HOLD_REASON if redacted and self.firewall.policy(tenant_id) is RedactionPolicy.hold else None
        result = self.admission().admit(tenant_id, chosen, source, hold_reason=hold).stored
        metrics.add_metric(name="MemoriesCreated", unit="Count", value=result.created)
        metrics.add_metric(name="MemoriesMerged", unit="Count", value=result.merged)

    def _extract(self, turns: list[Turn]) -> tuple[list[TurnConcept], int]:
        """The whole log in one call when it fits the window; otherwise consecutive runs of turns,
        each call given the labels already extracted (as for long documents, S4 step 3)."""
        cfg, window = self.settings.conversation, self.settings.extraction.window_tokens
        chunks: list[list[Turn]] = [[]]
        size = 0
        for turn in turns:
            cost = estimate_tokens(turn.content) + 8
            if chunks[-1] and size + cost > window:
                chunks.append([])
                size = 0
            chunks[-1].append(turn)
            size += cost
        if len(chunks) > self.settings.extraction.max_calls_per_document:
            raise PermanentError(f"the conversation needs {len(chunks)} extraction calls; the limit is reached")
        extractor = self.extractor()  # type: ignore[misc]
        concepts: list[TurnConcept] = []
        for chunk in chunks:
            concepts.extend(
                extractor.extract_conversation(
                    chunk,
                    known=[c.label for c in concepts],
                    min_concepts=cfg.min_concepts,
                    max_concepts=cfg.max_concepts,
                )
            )
        return concepts, len(chunks)

    def _clamp(self, concepts: list[TurnConcept]) -> list[TurnConcept]:
        """At most ``max_concepts`` concepts and ``max_facts`` facts: acceptable ones first, then
        the most important (S8: the facts people stated are not capped by the concept count)."""
        cfg = self.settings.conversation
        min_chars = self.settings.extraction.min_definition_chars

        def best(some: list[TurnConcept], limit: int) -> list[TurnConcept]:
            ranked = sorted(
                some,
                key=lambda c: (rejection_reason(c, min_definition_chars=min_chars) is not None, -int(c.importance)),
            )
            return ranked[:limit]

        facts = [c for c in concepts if c.fact]
        return [*best([c for c in concepts if not c.fact], cfg.max_concepts), *best(facts, cfg.max_facts)]


def _count_by(values) -> dict[str, int]:
    out: dict[str, int] = {}
    for value in values:
        out[value] = out.get(value, 0) + 1
    return out
