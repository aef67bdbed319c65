"""Retrieval quality on LoCoMo (S14): the full S6 read path against BM25, dense-only and RRF baselines.

Protocol (the dataset's README, beside ``locomo10.json``): one memory per turn, written as
``"[<session date>] <speaker>: <text> [shared image: <blip_caption>]"``; each conversation is its
own tenant; each question (categories 1-4, evidence normalised, empty evidence skipped) queries
only its conversation; evidence recall@k = |top-k dia_ids ∩ evidence| / |evidence|, averaged over
questions, per category and overall.

ContextOS decays memories by time (S5), and the sessions date from 2022-2024, so each
conversation's timeline is shifted to end "now" (relative gaps kept). Because decay then hides
most of a months-long conversation, the same memories are also stored in a second tenant per
conversation whose turns all lie within the last second (``contextos_fresh``): that isolates
the ranking from forgetting. Both variants go through ``RetrievalService.context`` (dry run);
when the intent-adaptive scoring recipe is configured, the fresh tenant is also queried with it.
Diagnostics: turns per band at query time, evidence found by the searches but dropped by the
band filter, the candidate pool's evidence recall, the per-source cap's effect, and what-if
orderings of the fresh variant's own candidate pool (vector only, 0.5·vector + 0.3·text,
semantic, RRF of its vector and text ranks). A failed context call counts as nothing retrieved
and is listed in the report.

The baselines run in the same process on the same memory texts and the same MiniLM vectors:
BM25 (bm25s, English stopwords, Snowball stemmer), dense (cosine top-k) and reciprocal-rank
fusion of the two (k = 60, top 100 each).

Run: ``.venv/bin/python benchmarks/locomo.py [--conversations N] [--limit-questions N]``.
The data (CC BY-NC 4.0, Maharana et al., ACL 2024, github.com/snap-research/locomo) is read at
run time from ``$CONTEXTOS_LOCOMO_DATA`` (``locomo_data``) and never copied into the repository.
A fresh embedded PostgreSQL is started in a temp dir.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.decay import band_of, decay_rate, strength_at
from contextos.models import BASE_TRUST, Band, ContextRequest, LifecycleReport, MemoryCandidate, Provenance
from contextos.observability import metrics
from contextos.services.cold import ColdStorage
from contextos.services.firewall import Firewall
from contextos.services.lifecycle import LifecycleService
from contextos.services.retrieval import RetrievalService
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.lifecycle import LifecycleStore
from contextos.store.migrate import migrate
from contextos.store.privacy import PrivacyStore
from contextos.store.stores import Stores

from benchmarks.report import write_report
from tests.memory_writer import add_memories

LOCOMO_FILE = "datasets/locomo/locomo10.json"


def locomo_data() -> Path:
    """LoCoMo's ``locomo10.json``: ``$CONTEXTOS_LOCOMO_DATA``, else the first
    ``datasets/locomo/locomo10.json`` found in the folder holding this repository or in a folder
    beside it (the dataset's licence keeps it out of the repository: see the README)."""
    named = os.environ.get("CONTEXTOS_LOCOMO_DATA")
    if named:
        return Path(named)
    beside = Path(__file__).resolve().parents[1].parent
    found = [beside / LOCOMO_FILE, *sorted(beside.glob(f"*/{LOCOMO_FILE}"))]
    return next((path for path in found if path.is_file()), found[0])


DATA = locomo_data()
KS = (5, 10, 20)
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
EMBED_BATCH = 64
TURN_SPACING = timedelta(seconds=30)  # turns within a session, after the session's start time
FRESH_SPACING = timedelta(milliseconds=1)  # the fresh variant: whole conversation within ~0.7 s
RRF_K = 60
RRF_DEPTH = 100
BASELINES = ("bm25", "dense", "rrf")
WHATIFS = ("pool_by_vector", "pool_by_vector_text", "pool_by_semantic", "pool_rrf_vector_text")


# -- data ------------------------------------------------------------------------------------
@dataclass
class Turn:
    dia_id: str
    session: int
    index: int  # 1-based within the session
    speaker: str
    text: str  # the memory text (README turn-level format)
    when: datetime  # the session's date (naive, as written) plus the turn's offset


@dataclass
class Question:
    sample_id: str
    question: str
    category: int
    evidence: list[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question] = field(default_factory=list)


def parse_when(value: str) -> datetime:
    """``"1:56 pm on 8 May, 2023"`` → datetime."""
    return datetime.strptime(value.strip(), "%I:%M %p on %d %B, %Y")


def normalise_evidence(raw: list, known: set[str]) -> list[str]:
    """README quirks: several ids in one string, ``D:11:26`` = ``D11:26``, ``D30:05`` = ``D30:5``;
    ids that do not exist are dropped."""
    out: list[str] = []
    for item in raw:
        for session, turn in re.findall(r"D:?(\d+):(\d+)", str(item)):
            dia_id = f"D{int(session)}:{int(turn)}"
            if dia_id in known and dia_id not in out:
                out.append(dia_id)
    return out


def load(path: Path) -> list[Conversation]:
    conversations = []
    for sample in json.loads(path.read_text()):
        conv = sample["conversation"]
        sessions = sorted(
            int(m.group(1))
            for key, value in conv.items()
            if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(value, list)
        )
        turns: list[Turn] = []
        for n in sessions:
            date = conv[f"session_{n}_date_time"]
            start = parse_when(date)
            for i, turn in enumerate(conv[f"session_{n}"]):
                text = f"[{date}] {turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shared image: {turn['blip_caption']}]"
                turns.append(Turn(turn["dia_id"], n, i + 1, turn["speaker"], text, start + i * TURN_SPACING))
        known = {t.dia_id for t in turns}
        c = Conversation(sample["sample_id"], turns)
        for qa in sample["qa"]:
            category = int(qa["category"])
            evidence = normalise_evidence(qa.get("evidence") or [], known)
            if category in CATEGORIES and evidence:
                c.questions.append(Question(c.sample_id, qa["question"], category, evidence))
        conversations.append(c)
    return conversations


def embed(embedder, texts: list[str]) -> np.ndarray:
    """Length-sorted batches (less padding), returned in the input order."""
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    vectors = np.asarray(embedder.embed([texts[i] for i in order]), dtype=np.float32)
    out = np.empty_like(vectors)
    out[order] = vectors
    return out


CACHE = Path(__file__).resolve().parents[1] / ".contextos" / "bench-cache"  # git-ignored


def cached_embed(embedder, name: str, texts: list[str]) -> np.ndarray:
    """`embed`, kept on disk keyed by the model and a hash of the texts: a rerun skips minutes of
    embedding (the cache holds vectors only, never the dataset's text)."""
    import hashlib

    digest = hashlib.sha256(("all-MiniLM-L6-v2-int8\n" + "\n".join(texts)).encode()).hexdigest()[:16]
    path = CACHE / f"{name}-{digest}.npy"
    if path.exists():
        return np.load(path)
    vectors = embed(embedder, texts)
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


# -- ContextOS ----------------------------------------------------------------------------------
class MemoryBlobs:
    """The cold bucket in memory (the benchmark's stand-in for S3; the tests use moto)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], bytes] = {}

    def put(self, bucket: str, key: str, data: bytes, *, content_type: str = "application/octet-stream") -> None:
        self.objects[(bucket, key)] = data

    def get_range(self, bucket: str, key: str, start: int, end: int) -> bytes:
        return self.objects[(bucket, key)][start : end + 1]


class InstrumentedRetrieval(RetrievalService):
    """The real read path, recording what it dropped on the way (nothing in it is changed):
    the candidate pool before the band filter, what the band filter kept, and the ranking before
    the per-source cap."""

    last: dict

    def context(self, tenant_id, request, *, query_vector=None):
        self.last = {}
        return super().context(tenant_id, request, query_vector=query_vector)

    def _candidates(self, rows, found, *args, **kwargs):
        out = super()._candidates(rows, found, *args, **kwargs)
        if not kwargs.get("pinned"):  # the searched pool, not the always-load memories
            self.last["pool"] = [r["id"] for r in rows]
            self.last["kept"] = [c.id for c in out]
        return out

    def _forgetting_budget(self, ranked, sources, limit, *args, **kwargs):
        chosen = super()._forgetting_budget(ranked, sources, limit, *args, **kwargs)
        self.last["ranked"] = [(r.candidate.id, r.score) for r in ranked]
        return chosen


def scanned_read_path(
    db: Database, settings: Settings, embedder, service: type[RetrievalService] = RetrievalService, blobs=None
) -> tuple[Stores, LifecycleService, RetrievalService]:
    """The stores over ``db``, the lifecycle scan and the read path as deployed (``service``, a
    ``RetrievalService`` or a subclass that instruments it), sharing cold storage in ``blobs``."""
    store = Stores.over(db, settings.decay, settings.merge)
    lifecycle_store = LifecycleStore(db, settings.decay, settings.lifecycle)
    cold = ColdStorage(lifecycle_store, blobs or MemoryBlobs(), settings.cold_bucket, settings.lifecycle)
    scan = LifecycleService(
        tenants=store.tenants,
        vectors=store.admission,
        lifecycle=lifecycle_store,
        cold=cold,
        settings=settings.lifecycle,
    )
    return store, scan, service(settings=settings, store=store.reads, embedder=embedder, cold=cold)


def store_conversation(
    store: Stores, settings: Settings, tenant: str, conv: Conversation, vectors: np.ndarray, times: list[datetime]
) -> dict:
    """One memory per turn, one ``add_memories`` call (and session id) per LoCoMo session.
    Returns memory id → dia_id."""
    rate = decay_rate(5, "event", settings.decay)
    by_session: dict[int, list[int]] = defaultdict(list)
    for i, t in enumerate(conv.turns):
        by_session[t.session].append(i)
    id_to_dia = {}
    for session, idx in by_session.items():
        candidates = [
            MemoryCandidate(
                norm_key=f"{conv.sample_id}:{conv.turns[i].dia_id}",
                label=f"{conv.turns[i].dia_id} {conv.turns[i].speaker}",
                definition=conv.turns[i].text,
                type="event",
                importance=5,
                embedding=vectors[i].tolist(),
                decay_rate=rate,
                provenance=Provenance.user_turn,
                base_trust=BASE_TRUST[Provenance.user_turn],
            )
            for i in idx
        ]
        ids = add_memories(
            store,
            tenant,
            candidates,
            embedder_id="locomo-minilm",
            at=[times[i] for i in idx],
            session_id=f"{conv.sample_id}:S{session}",
            message_seqs=[conv.turns[i].index for i in idx],
            # ids from the tenant and turn: equal scores are ordered by id, so every run ranks alike
            ids=[uuid.uuid5(uuid.NAMESPACE_URL, f"locomo:{tenant}:{conv.turns[i].dia_id}") for i in idx],
        )
        id_to_dia.update({m: conv.turns[i].dia_id for m, i in zip(ids, idx, strict=True)})
    return id_to_dia


# -- baselines ----------------------------------------------------------------------------------
class BM25Index:
    def __init__(self, texts: list[str]) -> None:
        import bm25s
        import Stemmer

        self._bm25s = bm25s
        self._stemmer = Stemmer.Stemmer("english")
        self._n = len(texts)
        self._index = bm25s.BM25()
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=self._stemmer, show_progress=False)
        self._index.index(tokens, show_progress=False)

    def search(self, query: str, k: int) -> list[int]:
        tokens = self._bm25s.tokenize([query], stopwords="en", stemmer=self._stemmer, show_progress=False)
        docs, _ = self._index.retrieve(tokens, k=min(k, self._n), show_progress=False)
        return [int(d) for d in docs[0]]


def dense_search(matrix: np.ndarray, query: np.ndarray, k: int) -> list[int]:
    sims = matrix @ query
    top = np.argpartition(-sims, min(k, len(sims) - 1))[:k]
    return [int(i) for i in top[np.argsort(-sims[top])]]


def rrf(*rankings: list[int], k: int = RRF_K) -> list[int]:
    scores: dict[int, float] = defaultdict(float)
    for ranking in rankings:
        for r, doc in enumerate(ranking, start=1):
            scores[doc] += 1.0 / (k + r)
    return sorted(scores, key=lambda d: -scores[d])


def whatif(ranked: list, id_map: dict) -> dict:
    """Other orderings of the fresh variant's own candidate pool (after bands, before the cap):
    where its ranking, not its searches, loses evidence."""
    ids = [i for i, _ in ranked]
    by = {i: sc for i, sc in ranked}
    vec = sorted(ids, key=lambda i: -by[i].vector)
    sem = sorted(ids, key=lambda i: -by[i].semantic)
    vt = sorted(ids, key=lambda i: -(0.5 * by[i].vector + 0.3 * by[i].text))
    txt = sorted((i for i in ids if by[i].text > 0), key=lambda i: -by[i].text)
    fused = rrf([ids.index(i) for i in vec], [ids.index(i) for i in txt])
    return {
        "pool_by_vector": [id_map[i] for i in vec],
        "pool_by_vector_text": [id_map[i] for i in vt],
        "pool_by_semantic": [id_map[i] for i in sem],
        "pool_rrf_vector_text": [id_map[ids[j]] for j in fused],
    }


# -- metrics --------------------------------------------------------------------------------------
def recall(retrieved: list[str], evidence: list[str], k: int) -> float:
    return len(set(retrieved[:k]) & set(evidence)) / len(evidence)


def summarise(rows: list[dict], method: str) -> dict:
    """Recall / any-hit / all-hit at each k, in percent, overall and per category."""

    def block(items: list[dict]) -> dict:
        out: dict = {"n": len(items)}
        for k in KS:
            rec = [recall(r[method], r["evidence"], k) for r in items]
            out[f"r@{k}"] = round(100 * float(np.mean(rec)), 1) if rec else None
        for k in KS:
            hits = [recall(r[method], r["evidence"], k) for r in items]
            out[f"any@{k}"] = round(100 * float(np.mean([h > 0 for h in hits])), 1) if hits else None
            out[f"all@{k}"] = round(100 * float(np.mean([h == 1 for h in hits])), 1) if hits else None
        return out

    result = block(rows)
    result["per_category"] = {
        f"{c}-{name}": block([r for r in rows if r["category"] == c]) for c, name in CATEGORIES.items()
    }
    return result


# -- stale distractors ------------------------------------------------------------------------------
STALE = Path(__file__).resolve().parent / "data" / "stale_distractors.json"


def age_tenant(url: str, tenant: str, days: float) -> None:
    """Time passes for one tenant: every timestamp of its memories, their occurrences and edges moves
    ``days`` into the past (as the database owner; the audit chain is append-only and keeps its real
    times). Moving all of them together keeps every derived time consistent (strength anchors,
    next band crossings, validity), so the write path can run at "now" at each step of a timeline."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        for table in ("memories", "memory_items", "relationships"):
            columns = [
                r[0]
                for r in conn.execute(
                    """SELECT column_name FROM information_schema.columns
                       WHERE table_name = %s AND data_type = 'timestamp with time zone'""",
                    [table],
                ).fetchall()
            ]
            shift = ", ".join(f"{c} = {c} - make_interval(secs => %(s)s)" for c in columns)
            conn.execute(f"UPDATE {table} SET {shift} WHERE tenant_id = %(t)s", {"s": days * 86400.0, "t": tenant})


def stale_distractors(
    url: str, db: Database, service: RetrievalService, scan: LifecycleService, settings: Settings, embedder
) -> dict:
    """What decay buys (S5): each subject stated early and updated later, beside unrelated old
    memories, in one tenant on its real timeline. Every statement goes in through the write path as
    deployed (``POST /v1/memories``: the trust gate and the contradiction gate with the local judge),
    in the order of its date; between two dates the tenant ages (`age_tenant`) and the lifecycle scan
    runs, so what decay forgot is a cold stub when the next statement arrives. Per subject's query,
    through the deployed default recipe: does the current statement outrank the stale one, and do the
    unrelated old memories stay out of the top 10? Also reported: what the gate wrote (supersessions,
    update links) and whether each link joins a stale statement to its own update."""
    from contextos.governance_models import MemoryCreate
    from contextos.judge.local import LocalHeuristicJudge
    from contextos.services.contradiction import ContradictionGate
    from contextos.services.governance import GovernanceService
    from contextos.store.governance import GovernanceStore

    data = json.loads(STALE.read_text())
    subjects, unrelated = data["subjects"], data["unrelated_old"]
    events: list[tuple[float, tuple[str, int], str]] = []  # (days ago, kind, text)
    for n, s in enumerate(subjects):
        events += [
            (data["stale_days_ago"], ("stale", n), s["stale"]),
            (data["current_days_ago"], ("current", n), s["current"]),
        ]
    oldest, newest = data["unrelated_days_ago"]
    for i, text in enumerate(unrelated):
        events.append((oldest - (oldest - newest) * i / max(len(unrelated) - 1, 1), ("unrelated", i), text))
    events.sort(key=lambda e: -e[0])  # oldest first: the ingestion sequence follows the timeline
    gov = settings.governance
    gate = ContradictionGate(LocalHeuristicJudge(), gov, prejudges=bool(gov.prejudge))  # as the container builds it
    writes = GovernanceService(
        settings=settings,
        store=Stores.over(db, settings.decay, settings.merge, gate=gate).admission,
        governance=GovernanceStore(db),
        embedder=embedder,
        firewall=Firewall(PrivacyStore(db)),
    )
    tenant = "stale-distractors"
    kind_of: dict = {}
    report = LifecycleReport()
    previous = events[0][0]
    for days_ago, kind, text in events:
        if days_ago != previous:
            age_tenant(url, tenant, previous - days_ago)
            scan.scan_tenant(tenant, report)  # as deployed: the scan has run since (every 4 h)
            previous = days_ago
        admitted = writes.create_memory(
            tenant, MemoryCreate(label=text[:40], definition=text), actor="bench", ceiling=Provenance.user_turn
        )
        metrics.clear_metrics()
        kind_of[admitted.memory_id] = kind
    age_tenant(url, tenant, previous)
    scan.scan_tenant(tenant, report)
    with db.tenant_tx(tenant) as conn:
        links = conn.execute(
            "SELECT id, updated_by, superseded_by FROM memories WHERE tenant_id = %s", [tenant]
        ).fetchall()
    updated = [(kind_of[r["id"]], kind_of.get(r["updated_by"])) for r in links if r["updated_by"]]
    superseded = [(kind_of[r["id"]], kind_of.get(r["superseded_by"])) for r in links if r["superseded_by"]]

    def own_update(pair: tuple) -> bool:
        return pair[0][0] == "stale" and pair[1] == ("current", pair[0][1])

    query_vectors = embed(embedder, [s["query"] for s in subjects])
    current_first = unrelated_in_top10 = other_old_in_top10 = current_in_top10 = 0
    for n, (s, qv) in enumerate(zip(subjects, query_vectors, strict=True)):
        result = service.context(
            tenant,
            ContextRequest(query=s["query"], dry_run=True, max_memories=20, token_budget=100_000),
            query_vector=qv.tolist(),
        )
        metrics.clear_metrics()
        ranked = [kind_of[m.id] for m in result.memories]
        position = {k: i for i, k in enumerate(ranked)}
        current, stale = position.get(("current", n)), position.get(("stale", n))
        current_first += current is not None and (stale is None or current < stale)
        current_in_top10 += current is not None and current < 10
        top10 = ranked[:10]
        unrelated_in_top10 += any(kind == "unrelated" for kind, _ in top10)
        other_old_in_top10 += any(kind == "stale" and i != n for kind, i in top10)
    q = len(subjects)
    return {
        "queries": q,
        "memories": len(events),
        "stale_current_first_rate": round(current_first / q, 3),
        "current_in_top10_rate": round(current_in_top10 / q, 3),
        "unrelated_old_in_top10_rate": round(unrelated_in_top10 / q, 3),
        "other_subjects_stale_in_top10_rate": round(other_old_in_top10 / q, 3),
        "write_path": "GovernanceService.create_memory (POST /v1/memories), trust and contradiction gates, local judge",
        "gate_superseded": len(superseded),
        "gate_superseded_own_update": sum(map(own_update, superseded)),
        "gate_update_links": len(updated),
        "gate_update_links_own_update": sum(map(own_update, updated)),
        "gate_false_links": len(updated) + len(superseded) - sum(map(own_update, updated + superseded)),
        "decay_rate_per_day": round(decay_rate(5, "fact", settings.decay), 4),
        "archived_to_cold": report.archived,
        "data": "benchmarks/data/stale_distractors.json",
    }


# -- main -------------------------------------------------------------------------------------------
def code_state() -> dict:
    """The commit measured, and whether the ContextOS sources differed from it."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "shared"], cwd=root, capture_output=True, text=True)
        return {"commit": head.stdout.strip(), "shared_modified": bool(dirty.stdout.strip())}
    except OSError:
        return {}


def stale_only() -> dict:
    """The stale-distractor set alone, in a fresh embedded PostgreSQL."""
    from contextos.embedding.local import LocalMiniLMEmbedder

    settings = Settings()
    embedder = LocalMiniLMEmbedder(batch_size=EMBED_BATCH)
    with tempfile.TemporaryDirectory(prefix="contextos-stale-") as tmp:
        url = embedded_database_url(Path(tmp))
        migrate(url, get_dialect("postgres"), 384, "locomo-minilm")
        db = Database(url, get_dialect("postgres"), max_size=4)
        _, scan, service = scanned_read_path(db, settings, embedder)
        try:
            return stale_distractors(url, db, service, scan, settings, embedder)
        finally:
            db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=10, help="first N conversations (default all 10)")
    parser.add_argument("--limit-questions", type=int, default=None, help="at most N questions per conversation")
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--no-report", action="store_true", help="print only; leave benchmarks/reports alone")
    parser.add_argument(
        "--dump", type=Path, default=None, help="write per-question rankings here (dataset text: keep out of git)"
    )
    parser.add_argument(
        "--stale-only", action="store_true", help="only the stale-distractor set (report: locomo_stale_distractors)"
    )
    args = parser.parse_args()
    if args.stale_only:
        stale = stale_only()
        print(json.dumps(stale, indent=1))
        if not args.no_report:
            write_report(
                "locomo_stale_distractors",
                {**stale, "code": code_state()},
                title="Stale distractors: the current statement first (S5, S7)",
                notes=[
                    "The stale-distractor set of benchmarks/locomo.py alone (`--stale-only`): every statement "
                    "through POST /v1/memories' service with the trust and contradiction gates (local judge) in "
                    "date order, the tenant aged and the lifecycle scan run between dates; 30 queries through the "
                    "deployed default recipe (dry run). The full LoCoMo run writes the same figures into locomo.json."
                ],
            )
        return

    started_all = time.perf_counter()
    settings = Settings()
    conversations = load(args.data)[: args.conversations]
    for c in conversations:
        c.questions = c.questions[: args.limit_questions] if args.limit_questions else c.questions
    n_questions = sum(len(c.questions) for c in conversations)
    n_turns = sum(len(c.turns) for c in conversations)
    print(f"{len(conversations)} conversations, {n_turns} turns, {n_questions} questions (categories 1-4)")

    from contextos.embedding.local import LocalMiniLMEmbedder

    embedder = LocalMiniLMEmbedder(batch_size=EMBED_BATCH)
    t0 = time.perf_counter()
    turn_vectors = cached_embed(embedder, "turns", [t.text for c in conversations for t in c.turns])
    embed_turns_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    question_vectors = cached_embed(embedder, "questions", [q.question for c in conversations for q in c.questions])
    embed_questions_s = time.perf_counter() - t0
    print(f"embedded {n_turns} turns in {embed_turns_s:.0f} s, {n_questions} questions in {embed_questions_s:.0f} s")

    rate = decay_rate(5, "event", settings.decay)
    # ContextOS variants: name → (timeline, extra request fields).
    variants: dict[str, tuple[str, dict]] = {"contextos": ("shifted", {}), "contextos_fresh": ("fresh", {})}
    if settings.retrieval.default_recipe != "standard":  # the seed formula, for comparison
        variants["contextos_fresh_standard"] = ("fresh", {"recipe": "standard"})
    methods = (*variants, *BASELINES)
    results: list[dict] = []
    failures: list[dict] = []
    diag = defaultdict(int)
    band_counts: dict[str, int] = defaultdict(int)
    returned: dict[str, list[int]] = defaultdict(list)
    tokens: dict[str, list[int]] = defaultdict(list)
    latencies: list[float] = []
    store_s = scan_s = 0.0
    archived = 0
    with tempfile.TemporaryDirectory(prefix="contextos-locomo-") as tmp:
        url = embedded_database_url(Path(tmp))
        migrate(url, get_dialect("postgres"), 384, "locomo-minilm")
        db = Database(url, get_dialect("postgres"), max_size=4)
        store, scan, service = scanned_read_path(db, settings, embedder, InstrumentedRetrieval)

        turn_offset = question_offset = 0
        for conv in conversations:
            vectors = turn_vectors[turn_offset : turn_offset + len(conv.turns)]
            qvectors = question_vectors[question_offset : question_offset + len(conv.questions)]
            turn_offset += len(conv.turns)
            question_offset += len(conv.questions)

            # Timelines: shifted so the last turn is "now" (gaps kept), and compressed into ~1 s.
            now = datetime.now(UTC)
            shift = now - conv.turns[-1].when.replace(tzinfo=UTC)
            shifted = [t.when.replace(tzinfo=UTC) + shift for t in conv.turns]
            fresh = [now - (len(conv.turns) - 1 - i) * FRESH_SPACING for i in range(len(conv.turns))]
            t0 = time.perf_counter()
            tenants = {
                "shifted": (f"locomo-{conv.sample_id}", shifted),
                "fresh": (f"locomo-{conv.sample_id}-fresh", fresh),
            }
            id_maps = {
                timeline: store_conversation(store, settings, tenant, conv, vectors, times)
                for timeline, (tenant, times) in tenants.items()
            }
            store_s += time.perf_counter() - t0
            # As deployed: the lifecycle scan has run (it runs every 4 h), so what decay forgot is cold.
            t0 = time.perf_counter()
            report = LifecycleReport()
            scan.scan_tenant(tenants["shifted"][0], report)
            scan.scan_tenant(tenants["fresh"][0], report)
            archived += report.archived
            scan_s += time.perf_counter() - t0
            # Which band each turn is in when the questions are asked (shifted timeline).
            turn_band = {
                t.dia_id: band_of(strength_at(settings.decay.initial_strength, when, now, rate), settings.decay)
                for t, when in zip(conv.turns, shifted, strict=True)
            }
            for b in turn_band.values():
                band_counts[b.value] += 1

            bm25 = BM25Index([t.text for t in conv.turns])
            dia = [t.dia_id for t in conv.turns]
            for q, qv in zip(conv.questions, qvectors, strict=True):
                row: dict = {
                    "sample_id": conv.sample_id,
                    "category": q.category,
                    "evidence": q.evidence,
                }
                for method, (timeline, extra) in variants.items():
                    t0 = time.perf_counter()
                    try:
                        result = service.context(
                            tenants[timeline][0],
                            ContextRequest(
                                query=q.question, dry_run=True, max_memories=20, token_budget=100_000, **extra
                            ),
                            query_vector=qv.tolist(),
                        )
                    except Exception as exc:  # a failed read counts as nothing retrieved, and is reported
                        failures.append(
                            {
                                "method": method,
                                "sample_id": conv.sample_id,
                                "question": q.question,
                                "error": f"{type(exc).__name__}: {str(exc).splitlines()[0]}",
                            }
                        )
                        row[method] = []
                        continue
                    finally:
                        metrics.clear_metrics()  # the benchmark publishes no metrics (EMF auto-flush at 100)
                    latencies.append(time.perf_counter() - t0)
                    id_map = id_maps[timeline]
                    row[method] = [id_map[m.id] for m in result.memories]
                    returned[method].append(len(result.memories))
                    tokens[method].append(result.tokens_used)
                    last = service.last
                    ev = set(q.evidence)
                    pool = {id_map[i] for i in last.get("pool", [])}
                    kept = {id_map[i] for i in last.get("kept", [])}
                    ranked = [id_map[i] for i, _ in last.get("ranked", [])][:20]
                    if method == "contextos_fresh" and "ranked" in last:
                        row.update(whatif(last["ranked"], id_map))
                    diag[f"{method}:pool_evidence"] += len(pool & ev)
                    diag[f"{method}:evidence"] += len(ev)
                    diag[f"{method}:pool_recall_sum"] += len(pool & ev) / len(ev)
                    diag[f"{method}:pool_size_sum"] += len(pool)
                    top10 = result.memories[:10]
                    diag[f"{method}:top10_graph_only"] += sum(m.score.methods == ["graph"] for m in top10)
                    diag[f"{method}:top10_total"] += len(top10)
                    if (pool - kept) & ev:
                        diag[f"{method}:questions_evidence_dropped_by_band"] += 1
                    if "ranked" in last and ranked != row[method]:
                        diag[f"{method}:questions_reordered_by_source_cap"] += 1
                        diag[f"{method}:recall20_delta_from_cap"] += recall(row[method], q.evidence, 20) - recall(
                            ranked, q.evidence, 20
                        )
                bands = [turn_band[e] for e in q.evidence]
                if any(b is Band.forgotten for b in bands):
                    diag["questions_with_forgotten_evidence"] += 1
                if all(b is Band.forgotten for b in bands):
                    diag["questions_with_all_evidence_forgotten"] += 1
                b_rank = bm25.search(q.question, RRF_DEPTH)
                d_rank = dense_search(vectors, qv, RRF_DEPTH)
                row["bm25"] = [dia[i] for i in b_rank]
                row["dense"] = [dia[i] for i in d_rank]
                row["rrf"] = [dia[i] for i in rrf(b_rank, d_rank)]
                results.append(row)
            print(f"  {conv.sample_id}: {len(conv.turns)} turns, {len(conv.questions)} questions")
        stale = stale_distractors(url, db, service, scan, settings, embedder)
        print(f"stale distractors: {json.dumps(stale)}")
        db.close()

    total_s = time.perf_counter() - started_all
    summary = {m: summarise(results, m) for m in methods}
    if any(w in r for r in results for w in WHATIFS):
        for r in results:  # a failed call retrieved nothing, in every ordering
            for w in WHATIFS:
                r.setdefault(w, [])
    whatifs = {w: summarise(results, w) for w in WHATIFS if all(w in r for r in results)}
    if args.dump:
        args.dump.write_text(json.dumps(results, default=str))
    lat = np.array(latencies) * 1000
    n = max(len(results), 1)
    diagnostics = {
        "shifted_timeline_turn_bands": dict(band_counts),
        "questions_with_forgotten_evidence": diag["questions_with_forgotten_evidence"],
        "questions_with_all_evidence_forgotten": diag["questions_with_all_evidence_forgotten"],
        "failed_context_calls": failures,
    }
    for m in variants:
        diagnostics[m] = {
            "candidate_pool_recall": round(100 * diag[f"{m}:pool_recall_sum"] / n, 1),
            "mean_candidate_pool_size": round(diag[f"{m}:pool_size_sum"] / n, 1),
            "top10_share_found_only_by_graph": round(
                100 * diag[f"{m}:top10_graph_only"] / max(diag[f"{m}:top10_total"], 1), 1
            ),
            "questions_evidence_found_but_dropped_by_band": diag[f"{m}:questions_evidence_dropped_by_band"],
            "questions_reordered_by_source_cap": diag[f"{m}:questions_reordered_by_source_cap"],
            "r@20_change_from_source_cap": round(100 * diag[f"{m}:recall20_delta_from_cap"] / n, 2),
            "mean_memories_returned": round(float(np.mean(returned[m])), 1) if returned[m] else 0,
        }

    # -- print ----------------------------------------------------------------------------------
    header = (
        f"{'method':<26}" + "".join(f"{f'R@{k}':>7}" for k in KS) + "".join(f"{f'c{c} R@10':>10}" for c in CATEGORIES)
    )
    table = [header]
    for m, s in [*summary.items(), *whatifs.items()]:
        table.append(
            f"{m:<26}"
            + "".join(f"{s[f'r@{k}']!s:>7}" for k in KS)
            + "".join(f"{s['per_category'][f'{c}-{name}']['r@10']!s:>10}" for c, name in CATEGORIES.items())
        )
    print()
    print("\n".join(table))
    print(
        f"\nquestions: {len(results)}; per category: "
        + ", ".join(f"{c}={summary['bm25']['per_category'][f'{c}-{nm}']['n']}" for c, nm in CATEGORIES.items())
    )
    if failures:
        print(f"{len(failures)} failed context calls, first: {failures[0]}")
    if len(lat):
        print(f"context() latency p50/p95: {np.percentile(lat, 50):.0f} / {np.percentile(lat, 95):.0f} ms")
    print(f"diagnostics: {json.dumps(diagnostics)}")
    print(f"total {total_s:.0f} s (embedding turns {embed_turns_s:.0f} s, storing {store_s:.0f} s)")

    if args.no_report:
        return
    figures: dict = {
        "questions": len(results),
        "conversations": len(conversations),
        "turns": n_turns,
        **{f"{m} r@{k}": summary[m][f"r@{k}"] for m in methods for k in KS},
        "context_p50_ms": round(float(np.percentile(lat, 50)), 1),
        "context_p95_ms": round(float(np.percentile(lat, 95)), 1),
        "embed_turns_s": round(embed_turns_s, 1),
        "total_s": round(total_s, 1),
        **summary,
        "stale_current_first_rate": stale["stale_current_first_rate"],
        "stale_distractors": stale,
        **{f"{m} tokens_mean": round(float(np.mean(tokens[m])), 1) for m in variants if tokens[m]},
        "real_timeline_archived_to_cold": archived,
        "lifecycle_scan_s": round(scan_s, 1),
        "diagnostics": diagnostics,
        "whatif_reranks_of_contextos_fresh_pool": whatifs,
        "code": code_state(),
        "protocol": {
            "memory_text": "[<session_N_date_time>] <speaker>: <text> [shared image: <blip_caption>]",
            "label": "<dia_id> <speaker>",
            "session_id": "<sample_id>:S<N> (one per LoCoMo session)",
            "request": {"dry_run": True, "max_memories": 20, "token_budget": 100_000},
            "rrf": {"k": RRF_K, "depth": RRF_DEPTH},
            "embedder": "local all-MiniLM-L6-v2 int8, batch 64",
        },
    }
    notes = [
        "Data: LoCoMo (Maharana et al., ACL 2024; github.com/snap-research/locomo, CC BY-NC 4.0), read at run "
        "time from $CONTEXTOS_LOCOMO_DATA (datasets/locomo beside the repository by default); categories 1-4 "
        "with normalised, non-empty evidence.",
        "One memory per turn (type event, importance 5, user_turn provenance), one tenant per conversation, "
        "one session id per LoCoMo session; recall = share of a question's evidence dia_ids in the top k, "
        "averaged over questions (percent).",
        "`contextos`: each conversation's timeline shifted so its last turn is 'now', relative gaps kept; "
        f"event memories decay at {rate:.3f}/day, so older sessions are fading or forgotten at query time "
        "(see diagnostics).",
        "`contextos_fresh`: the same memories in a second tenant with the whole conversation stored within "
        "the last second (order kept), isolating ranking from forgetting.",
        "Both through RetrievalService.context(dry_run=True, max_memories=20, token_budget=100000) with the "
        "question's precomputed vector; baselines (BM25 bm25s stemmed, dense cosine, RRF k=60 over top 100) on "
        "the same texts and vectors in the same run.",
    ]
    path = write_report("locomo", figures, title="LoCoMo evidence recall (categories 1-4)", notes=notes)
    md = path.with_suffix(".md")
    lines = [
        "",
        "## Recall by method (percent)",
        "",
        "| method | R@5 | R@10 | R@20 |" + "".join(f" c{c} {name} R@10 |" for c, name in CATEGORIES.items()),
        "|---|---:|---:|---:|" + "---:|" * len(CATEGORIES),
    ]
    for m, s in [*summary.items(), *(("whatif " + k, v) for k, v in whatifs.items())]:
        lines.append(
            f"| {m} | {s['r@5']} | {s['r@10']} | {s['r@20']} |"
            + "".join(f" {s['per_category'][f'{c}-{name}']['r@10']} |" for c, name in CATEGORIES.items())
        )
    lines += ["", "## Diagnostics", "", "```json", json.dumps(diagnostics, indent=2), "```", ""]
    md.write_text(md.read_text() + "\n".join(lines))
    print(f"report: {path}")


if __name__ == "__main__":
    main()
