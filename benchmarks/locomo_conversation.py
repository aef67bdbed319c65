"""LoCoMo through the user's path (S8, S14): the conversation service, then the full read path.

Each LoCoMo session is posted turn by turn to the conversation service (``POST
/v1/sessions/{id}/messages``'s service) with its ``occurred_at`` on the real timeline (shifted so
the conversation's last turn is now, gaps kept), ended, and its flush job processed as deployed:
the local extractor, validation, the trust gate and the contradiction gate (local judge), the
admission store. Then the lifecycle scan runs once (as it does every 4 h) and every question is
asked through ``RetrievalService.context`` with the defaults (relevance floor on, dry run).

Scoring is strict: an evidence turn counts at k only when its own words are in the injected
block, inside one of the first k memories (shown as an excerpt or in a definition) — a memory that
merely cites the whole session counts for nothing. Also: the session-level hit rate (some
evidence session among the first 5 distinct sessions whose turns the block shows, in order),
``evidence_reachable_rate`` (evidence turns whose text some stored memory holds at all),
``concepts_per_flush``, ``tokens_mean``, the read path's wall time per question (``context_ms``
p50/p95; run this script over another revision's package for an A/B) and ``cost_per_turn``.

The entry is merged into ``benchmarks/reports/locomo.json`` as ``contextos_conversation_path``
(the rest of that report is left as ``benchmarks/locomo.py`` last wrote it; its per-turn figures
come from another run).

Run: ``.venv/bin/python benchmarks/locomo_conversation.py [--conversations N] [--limit-questions N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.conversations import FlushJob, MessageCreate
from contextos.models import ContextRequest, LifecycleReport, Provenance
from contextos.services.admission import Admission
from contextos.services.contradiction import ContradictionGate
from contextos.services.conversations import ConversationService
from contextos.services.firewall import Firewall
from contextos.settings import Settings
from contextos.store.admission import AdmissionStore
from contextos.store.conversations import ConversationStore
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.migrate import migrate
from contextos.store.privacy import PrivacyStore

from benchmarks import locomo
from benchmarks.report import REPORTS, write_report

KS = (5, 10, 20)
_PREFIX = re.compile(r"^\[[^\]]*\] ")


class ListQueue:
    """The conversation queue, in memory: the jobs the service sends, processed right after."""

    def __init__(self) -> None:
        self.jobs: list[dict] = []

    def send(self, message: dict) -> str:
        self.jobs.append(message)
        return str(len(self.jobs))


# the tables a flushed conversation writes rows to (their row bytes, indexes and archives not counted)
_STORED = ("messages", "memories", "memory_items", "memory_vectors", "memory_vector_bands", "relationships")


def _words(text: str) -> str:
    return " ".join(text.split())


def conversation_path(db: Database, settings: Settings, embedder) -> tuple[ConversationService, ListQueue]:
    """The conversation service as deployed over ``db`` (the local extractor, both gates with the
    local judge, the admission store), its queue a list the caller drains."""
    from contextos.extraction.local import LocalConceptExtractor
    from contextos.judge.local import LocalHeuristicJudge

    extractor = LocalConceptExtractor(
        max_concepts=settings.extraction.local_max_concepts,
        definition_chars=settings.extraction.local_definition_chars,
        generic_modifiers=settings.extraction.generic_modifiers,
    )
    gate = ContradictionGate(LocalHeuristicJudge(), settings.governance, prejudges=False)
    admission = Admission(settings, AdmissionStore(db, settings.decay, settings.merge, gate=gate), embedder)
    queue = ListQueue()
    service = ConversationService(
        settings=settings,
        store=ConversationStore(db),
        tenant_ids=lambda: [],
        firewall=Firewall(PrivacyStore(db)),
        queue=queue,
        extractor=lambda: extractor,
        admission=lambda: admission,
    )
    return service, queue


def post_conversation(service: ConversationService, queue: ListQueue, tenant: str, conv, shift: timedelta) -> None:
    """Each LoCoMo session posted turn by turn (``occurred_at`` its real time moved by ``shift``),
    ended, and its flush processed."""
    by_session: dict[int, list] = defaultdict(list)
    for turn in conv.turns:
        by_session[turn.session].append(turn)
    for number, turns in by_session.items():
        # both speakers are people: user turns, the speaker named in the text
        said = [(_PREFIX.sub("", t.text), t.when.replace(tzinfo=UTC) + shift) for t in turns]
        flush_session(service, queue, tenant, f"{conv.sample_id}-S{number}", said)


def flush_session(
    service: ConversationService, queue: ListQueue, tenant: str, session_id: str, said: list[tuple[str, datetime]]
) -> None:
    """One session's user turns (content, occurred_at) posted, the session ended and its flushes
    processed."""
    for content, when in said:
        service.append(
            tenant, Provenance.user_turn, session_id, MessageCreate(role="user", content=content, occurred_at=when)
        )
    service.end(tenant, session_id)
    while queue.jobs:
        service.process(FlushJob.model_validate(queue.jobs.pop(0)))


def stale_through_conversations(service: ConversationService, queue: ListQueue, scan, retrieval) -> dict:
    """``benchmarks/data/stale_distractors.json`` through the conversation path: each statement a
    user turn of its own session, said on its day (``occurred_at``: stale, unrelated and current
    days ago), posted and flushed oldest first, the lifecycle scan run after each day. Per
    subject's query (defaults, dry run): is the current statement's text shown before the stale
    one's (first memory showing it; within one memory, first in its text)?"""
    data = json.loads(locomo.STALE.read_text())
    subjects, unrelated = data["subjects"], data["unrelated_old"]
    oldest, newest = data["unrelated_days_ago"]
    events = [(data["stale_days_ago"], s["stale"]) for s in subjects]
    events += [(data["current_days_ago"], s["current"]) for s in subjects]
    events += [(oldest - (oldest - newest) * i / max(len(unrelated) - 1, 1), text) for i, text in enumerate(unrelated)]
    events.sort(key=lambda e: -e[0])
    tenant, now = "stale-distractors-conversation", datetime.now(UTC)
    for n, (days_ago, text) in enumerate(events):
        flush_session(service, queue, tenant, f"day-{n}", [(text, now - timedelta(days=days_ago))])
        if n + 1 == len(events) or events[n + 1][0] != days_ago:
            scan.scan_tenant(tenant, LifecycleReport())
    current_first = current_shown = 0
    for s in subjects:
        result = retrieval.context(tenant, ContextRequest(query=s["query"], dry_run=True))
        shown = [_words(" ".join([m.definition, *m.excerpts])) if m.tier_used != "L0" else "" for m in result.memories]

        def first(text: str, shown: list[str] = shown) -> tuple[int, int] | None:
            words = _words(text)
            return next(((i, t.index(words)) for i, t in enumerate(shown) if words in t), None)

        current, old = first(s["current"]), first(s["stale"])
        current_shown += current is not None
        current_first += current is not None and (old is None or current < old)
    return {
        "queries": len(subjects),
        "turns": len(events),
        "stale_current_first_rate": round(current_first / len(subjects), 3),
        "current_shown_rate": round(current_shown / len(subjects), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10)
    parser.add_argument("--limit-questions", type=int, default=None)
    parser.add_argument("--no-report", action="store_true")
    parser.add_argument("--show-missing", action="store_true", help="print the evidence turns no memory holds")
    args = parser.parse_args()
    started, cpu0 = time.perf_counter(), time.process_time()
    settings = Settings()
    conversations = locomo.load(locomo.DATA)[: args.conversations]
    for c in conversations:
        c.questions = c.questions[: args.limit_questions] if args.limit_questions else c.questions

    from contextos.embedding.local import LocalMiniLMEmbedder

    embedder = LocalMiniLMEmbedder(batch_size=locomo.EMBED_BATCH)
    rows: list[dict] = []
    tokens: list[int] = []
    context_ms: list[float] = []  # each question's read path, wall time
    shown_count: list[int] = []  # memories per answer shown with their text (L1/L2)
    concepts_per_flush: list[int] = []
    reachable: list[bool] = []
    in_items: list[bool] = []  # diagnostics: held by an occurrence (memory_items), held for review
    in_review: list[bool] = []
    with tempfile.TemporaryDirectory(prefix="contextos-locomo-conv-", ignore_cleanup_errors=True) as tmp:
        url = embedded_database_url(Path(tmp))
        migrate(url, get_dialect("postgres"), embedder.dimensions, embedder.model_id)
        db = Database(url, get_dialect("postgres"), max_size=4)
        service, queue = conversation_path(db, settings, embedder)
        _, scan, retrieval = locomo.scanned_read_path(db, settings, embedder)
        ingest_s = 0.0
        ingest_cpu_s = 0.0
        stored_bytes = 0
        turns_posted = 0
        for conv in conversations:
            tenant = f"locomo-conv-{conv.sample_id}"
            now = datetime.now(UTC)
            shift = now - conv.turns[-1].when.replace(tzinfo=UTC)
            t0, c0 = time.perf_counter(), time.process_time()
            post_conversation(service, queue, tenant, conv, shift)
            scan.scan_tenant(tenant, LifecycleReport())
            ingest_s += time.perf_counter() - t0
            ingest_cpu_s += time.process_time() - c0
            turns_posted += len(conv.turns)
            with db.tenant_tx(tenant) as conn:
                sizes = [
                    f"(SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM {t} t WHERE t.tenant_id = %(t)s)"
                    for t in _STORED
                ]
                stored_bytes += conn.execute(f"SELECT {' + '.join(sizes)} AS n", {"t": tenant}).fetchone()["n"]
                flushes = conn.execute("SELECT status, counts FROM conversation_flushes").fetchall()
                held = conn.execute(
                    "SELECT string_agg(coalesce(definition, '') || ' ' || coalesce(source_text, ''), ' ') AS t"
                    " FROM memories WHERE state IN ('active', 'archived')"  # a cold stub keeps its source_text
                ).fetchone()["t"]
                items = conn.execute(
                    "SELECT string_agg(array_to_string(excerpts, ' ') || ' ' || definition, ' ') AS t FROM memory_items"
                ).fetchone()["t"]
                pending = conn.execute("SELECT string_agg(candidate::text, ' ') AS t FROM review_queue").fetchone()["t"]
            concepts_per_flush += [int((f["counts"] or {}).get("accepted", 0)) for f in flushes]
            held = _words(held or "")
            turn_of = {t.dia_id: t for t in conv.turns}
            content = {d: _words(_PREFIX.sub("", t.text)) for d, t in turn_of.items()}
            evidence_turns = {d for q in conv.questions for d in q.evidence}
            reachable += [content[d] in held for d in evidence_turns]
            if args.show_missing:
                for d in sorted(d for d in evidence_turns if content[d] not in held):
                    print(f"missing {d}: {content[d][:160]}")
            items = _words(items or "")
            in_items += [content[d] in items for d in evidence_turns]
            in_review += [content[d] in (pending or "") for d in evidence_turns]
            for q in conv.questions:
                asked = time.perf_counter()
                result = retrieval.context(tenant, ContextRequest(query=q.question, dry_run=True))
                context_ms.append(1000 * (time.perf_counter() - asked))
                tokens.append(result.tokens_used)
                shown_count.append(sum(m.tier_used != "L0" for m in result.memories))
                shown = [
                    _words(" ".join([m.definition, *m.excerpts])) if m.tier_used != "L0" else ""
                    for m in result.memories
                ]
                row = {"category": q.category, "abstained": result.abstained}
                for k in KS:
                    block = " ".join(shown[:k])
                    row[f"r@{k}"] = sum(content[d] in block for d in q.evidence) / len(q.evidence)
                # the sessions of the turns the block shows, in the order shown: a memory citing a whole
                # session (or all of them, merged across sessions) does not stand for its turns
                sessions: list[int] = []
                for text in shown:
                    for d, words in content.items():
                        if turn_of[d].session not in sessions and words in text:
                            sessions.append(turn_of[d].session)
                wanted = {turn_of[d].session for d in q.evidence}
                row["session@5"] = float(bool(wanted & set(sessions[:5])))
                rows.append(row)
            print(
                f"{tenant}: {len(flushes)} flushes, {len(conv.questions)} questions, {time.perf_counter() - t0:.0f} s"
            )
        stale = stale_through_conversations(service, queue, scan, retrieval)
        db.close()

    def block(items: list[dict]) -> dict:
        out: dict = {"n": len(items)}
        for k in KS:
            out[f"r@{k}"] = round(100 * statistics.mean(r[f"r@{k}"] for r in items), 1) if items else 0.0
        out["session_hit@5"] = round(statistics.mean(r["session@5"] for r in items), 3) if items else 0.0
        return out

    entry = block(rows) | {
        "per_category": {
            f"{c}-{name}": block([r for r in rows if r["category"] == c]) for c, name in locomo.CATEGORIES.items()
        },
        "tokens_mean": round(statistics.mean(tokens), 1),
        "context_ms": {
            "p50": round(statistics.median(context_ms), 1),
            "p95": round(statistics.quantiles(context_ms, n=20)[-1], 1),
        },
        "abstained": sum(r["abstained"] for r in rows),
        "memories_with_text_mean": round(statistics.mean(shown_count), 2),
        "evidence_reachable_rate": round(statistics.mean(reachable), 3),
        # diagnostics: the evidence turns some occurrence (memory_items) holds, whether or not its
        # memory's searchable source_text still does; those a held candidate holds (review queue)
        "evidence_in_occurrences_rate": round(statistics.mean(in_items), 3),
        "evidence_held_for_review_rate": round(statistics.mean(in_review), 3),
        "concepts_per_flush": {
            "min": min(concepts_per_flush),
            "median": statistics.median(concepts_per_flush),
            "max": max(concepts_per_flush),
            "flushes": len(concepts_per_flush),
        },
        "stale_current_first_rate": stale["stale_current_first_rate"],
        "stale_distractors": stale,
        "ingest_s": round(ingest_s, 1),
        # what a turn costs to keep: this process's CPU (extraction, embedding, admission; the
        # database's own CPU is not in it) and the bytes of the tenant's rows, per turn posted
        "cost_per_turn": {
            "turns": turns_posted,
            "process_cpu_ms": round(1000 * ingest_cpu_s / max(turns_posted, 1), 2),
            "stored_bytes": round(stored_bytes / max(turns_posted, 1)),
            "stored_in": list(_STORED),
        },
        "cpu_s": round(time.process_time() - cpu0, 1),
        "total_s": round(time.perf_counter() - started, 1),
        "load_avg": [round(v, 2) for v in os.getloadavg()],
        "conversations": len(conversations),
    }
    print(json.dumps(entry, indent=1))
    if args.no_report:
        return
    path = REPORTS / "locomo.json"
    figures = json.loads(path.read_text()) if path.exists() else {}
    figures.pop("machine", None)
    figures["contextos_conversation_path"] = entry
    figures["evidence_reachable_rate"] = entry["evidence_reachable_rate"]
    write_report(
        "locomo",
        figures,
        title="LoCoMo evidence recall (categories 1-4)",
        notes=[
            "Per-turn entries (contextos, contextos_fresh, bm25, dense, rrf): benchmarks/locomo.py, one memory per"
            " turn (see its protocol).",
            "contextos_conversation_path: benchmarks/locomo_conversation.py, merged into this report: every session"
            " posted to the conversation service with occurred_at on the shifted real timeline, flushed, extracted"
            " (local extractor), admitted through both gates; lifecycle scan; defaults (relevance floor on). An"
            " evidence turn counts only when its own words are in the block within the first k memories.",
        ],
    )
    print(f"report: {path}")


if __name__ == "__main__":
    main()
