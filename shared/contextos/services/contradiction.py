"""The contradiction gate (S7): each admitted candidate against its nearest active memories, through
the ``Judge``. The store reads the neighbour pairs (``contextos.ports.gate.GateReads``) inside the
admission transaction, under the tenant lock; this decides the outcome (supersedes, corroborates,
update links) and the store applies it. Slow judges judge once before the lock (``prejudge``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from contextos.config import GovernanceSettings
from contextos.errors import PermanentError
from contextos.judge import Judge
from contextos.judge.local import reports_a_change, reports_an_update, reports_an_update_of_lexemes
from contextos.judgements import GateOutcome, Judgement, JudgementCache, JudgePair, Verdict
from contextos.models import MemoryCandidate
from contextos.normalization import is_verbatim_key, turn_words
from contextos.ports.gate import GateReads


def _stated(definition: str, norm_key: str) -> str:
    """What a memory states: a kept turn's words without its ``[time, speaker]`` prefix."""
    return turn_words(definition) if is_verbatim_key(norm_key) else definition


def _said(candidate: MemoryCandidate) -> str:
    return _stated(candidate.definition, candidate.norm_key)


def _premise(row: dict) -> str:
    """The stored statement as the judge sees it (OLDER)."""
    return f"{row['label']}: {row['definition']}"


@dataclass
class ContradictionGate:
    """Each admitted candidate against its top-k nearest active memories (S7), through the ``Judge``."""

    judge: Judge
    settings: GovernanceSettings
    prejudges: bool = True  # judge outside the lock first (worth it for slow judges only)

    def prejudge(self, candidates: Sequence[MemoryCandidate], neighbours: Sequence[dict[str, Any]]) -> JudgementCache:
        """Outside the tenant lock: judge each candidate against its neighbours as the store read them
        then. Under the lock, ``judge_batch`` calls the judge only for pairs that appeared or changed
        meanwhile, so slow judges (Bedrock) do not hold a tenant's admissions up."""
        pairs = [(r["idx"], r) for r in neighbours if r["judged"]]
        judged = self._judge_pairs(candidates, pairs)
        return {(idx, row["id"], _premise(row)): verdict for (idx, row), verdict in zip(pairs, judged, strict=True)}

    def judge_batch(
        self,
        reads: GateReads,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        *,
        hot_memories: int,
        cache: JudgementCache | None = None,
    ) -> GateOutcome:
        """Judge every candidate against its nearest active memories (and the memory its key would
        merge into). Runs under the tenant lock, before the upsert, so the batch's own new memories
        are not compared; pairs judged by ``prejudge`` on the same texts are not asked again."""
        outcome = GateOutcome(judge_id=getattr(self.judge, "model_id", "unknown"))
        if not candidates:
            return outcome
        cache = cache or {}
        neighbours = (
            reads.neighbours(candidates, final_keys, hot_memories, self.settings, self.floors(candidates))
            if hot_memories
            else []
        )
        pairs = [(row["idx"], row) for row in neighbours if row["judged"]]
        todo = [p for p in pairs if (p[0], p[1]["id"], _premise(p[1])) not in cache]
        fresh = dict(zip((id(p) for p in todo), self._judge_pairs(candidates, todo), strict=True))
        outcome.judged, outcome.judged_under_lock = len(pairs), len(todo)
        claimed: set[UUID] = set()
        for pair in pairs:
            idx, row = pair
            verdict = fresh.get(id(pair)) or cache[(idx, row["id"], _premise(row))]
            judgement, failed = verdict
            outcome.judge_failures += int(failed)
            memory_id = row["id"]
            outcome.keys[memory_id] = row["norm_key"]
            outcome.judgements[(idx, memory_id)] = judgement
            if judgement.verdict is Verdict.contradiction and memory_id not in claimed:
                claimed.add(memory_id)  # the first candidate (batch order) to contradict it supersedes it
                outcome.supersedes.setdefault(idx, []).append(memory_id)
            elif judgement.verdict is Verdict.entailment and row["norm_key"] != final_keys[idx]:
                outcome.corroborates.setdefault(idx, []).append(memory_id)  # a merge is corroboration enough
        if self.settings.update_links:
            # a kept turn is never judged (S8), but a later one that reports a change to an earlier
            # one links to it as its update, so the newer ranks first and both stay
            verbatim = [
                i for i, c in enumerate(candidates) if is_verbatim_key(c.norm_key) and reports_a_change(_said(c))
            ]
            near = [
                row | {"idx": verbatim[row["idx"]]}
                for row in reads.turns_near([candidates[i] for i in verbatim], self.settings)
            ]
            self._link_updates(reads, candidates, final_keys, [*neighbours, *near], outcome, claimed)
        return outcome

    def floors(self, candidates: Sequence[MemoryCandidate]) -> list[float]:
        """Per candidate, the lowest similarity the gate reads: the update floor only for a candidate
        that carries a change cue (only those can update a neighbour, ``_link_updates``), else the
        judge's floor."""
        cfg = self.settings
        if not cfg.update_links:
            return [cfg.contradiction_similarity_floor] * len(candidates)
        low = min(cfg.contradiction_similarity_floor, cfg.update_similarity_floor)
        return [low if reports_a_change(c.definition) else cfg.contradiction_similarity_floor for c in candidates]

    def _link_updates(
        self,
        reads: GateReads,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        neighbours: Sequence[dict[str, Any]],
        outcome: GateOutcome,
        claimed: set[UUID],
    ) -> None:
        """The neighbours (hot, and where stubs keep their lexemes the cold ones that share two words with it) that a
        candidate reports a change to without a contradiction verdict (`reports_an_update`)."""
        for row in neighbours:
            idx, memory_id = row["idx"], row["id"]
            judgement = outcome.judgements.get((idx, memory_id))
            if (
                memory_id in claimed
                or row["norm_key"] == final_keys[idx]
                or (judgement is not None and judgement.verdict is not Verdict.neutral)
            ):
                continue
            if reports_an_update(_stated(row["definition"], row["norm_key"]), _said(candidates[idx])):
                claimed.add(memory_id)
                outcome.updates.setdefault(idx, []).append(memory_id)
        # Only a candidate that reports a change can update anything: the cold probe asks for those.
        cued = [i for i, c in enumerate(candidates) if reports_a_change(_said(c))]
        if not reads.probes_cold or not cued:
            return
        for row in reads.cold_sharing_words([candidates[i] for i in cued], self.settings):
            idx, memory_id = cued[row["idx"]], row["id"]
            if memory_id in claimed or row["similarity"] < self.settings.update_similarity_floor:
                continue
            # a kept turn's label says only where it was said: its lexemes say what
            label = "" if is_verbatim_key(candidates[idx].norm_key) else row["label"]
            if reports_an_update_of_lexemes(label, row["lexemes"] or [], _said(candidates[idx])):
                claimed.add(memory_id)
                outcome.updates.setdefault(idx, []).append(memory_id)
                outcome.cold_updates.add(memory_id)

    def _judge_pairs(
        self, candidates: Sequence[MemoryCandidate], pairs: Sequence[tuple[int, dict[str, Any]]]
    ) -> list[tuple[Judgement, bool]]:
        """(judgement, failed) per pair, all of them in one ``judge_many`` call (labels as the
        subjects). An answer the judge got wrong in shape counts as neutral (nothing is superseded
        on a malformed verdict); an outage (TransientError) propagates, so the queue retries."""
        if not pairs:
            return []
        asked = [
            JudgePair(
                premise=_premise(row),
                hypothesis=f"{candidates[idx].label}: {candidates[idx].definition}",
                similarity=float(row["similarity"]),
                premise_subject=row["label"],
                hypothesis_subject=candidates[idx].label,
            )
            for idx, row in pairs
        ]
        try:
            judgements = self.judge.judge_many(asked)
        except PermanentError:
            unusable = Judgement(verdict=Verdict.neutral, confidence=0.0, reason="the judge's answer was unusable")
            return [(unusable, True)] * len(pairs)
        return [(j, not j.answered) for j in judgements]
