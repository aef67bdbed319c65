"""The context block (S6.5–S6.7): the forgetting budget, the token budget and its tiers, and the
block's assembly with attention positioning. Pure: the read path (``contextos.services.retrieval``)
hands it the ranked candidates."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Literal
from uuid import UUID

from contextos.evidence import stems
from contextos.models import NearMiss, ScoredMemory
from contextos.normalization import SESSION_HEADER_PREFIX, estimate_tokens, is_verbatim_key
from contextos.scoring import Candidate, Ranked

Tier = Literal["L0", "L1", "L2"]  # S6.6: label, definition, definition and source excerpts


def forgetting_budget(
    ranked: list[Ranked],
    sources: dict,
    limit: int,
    max_share_per_source: float,
    near_misses_per_reason: int,
    *,
    left_out: list[NearMiss] | None = None,
) -> list[Ranked]:
    """At most ``limit`` memories, and no single source above its share of them (S6.5).
    ``left_out`` (a dry run's) receives the first ones past the limit and those the cap skipped."""
    cap = max(1, int(limit * max_share_per_source))
    per_source: dict[str, int] = {}
    chosen: list[Ranked] = []
    for n, r in enumerate(ranked):
        if len(chosen) >= limit:
            if left_out is not None:
                left_out += [near_miss(x, "max_memories") for x in ranked[n : n + near_misses_per_reason]]
            break
        primary = (sources.get(r.candidate.id) or ["manual"])[0]
        if per_source.get(primary, 0) >= cap:
            if left_out is not None:
                left_out.append(near_miss(r, "source_cap"))
            continue
        per_source[primary] = per_source.get(primary, 0) + 1
        chosen.append(r)
    return chosen


def token_budget(
    chosen: list[Ranked], sources: dict, excerpts: dict, budget: int, *, left_out: list[NearMiss] | None = None
) -> tuple[list[ScoredMemory], list[str], int]:
    """Tiers (S6.6): every chosen memory is first listed by label (L0); then, best first and
    while the budget lasts, they are raised to L2 (definition plus source excerpts) or L1
    (definition). What is left stays in the final L0 index; what does not fit even there is
    ``left_out`` (a dry run's)."""
    l0 = [estimate_tokens(r.candidate.payload["label"]) + 2 for r in chosen]
    while chosen and sum(l0) > budget:
        if left_out is not None:
            left_out.append(near_miss(chosen[-1], "token_budget"))
        chosen, l0 = chosen[:-1], l0[:-1]
    used = sum(l0)
    tiers: list[Tier] = []
    raising = True
    for r, base in zip(chosen, l0, strict=True):
        row = r.candidate.payload
        l1 = estimate_tokens(f"{row['label']}: {row['definition']}") + 4
        l1 += 4 if said_at(row, sources.get(row["id"], [])) is not None else 0  # ", said 2023-05-08"
        l2 = l1 + sum(estimate_tokens(e) + 2 for e in excerpts.get(row["id"], []))
        tier: Tier = "L0"
        if raising and excerpts.get(row["id"]) and used - base + l2 <= budget:
            tier, used = "L2", used - base + l2
        elif raising and used - base + l1 <= budget:
            tier, used = "L1", used - base + l1
        else:
            raising = False  # the budget is spent: the rest stay in the index
        tiers.append(tier)
    memories = [
        scored(r, tier, sources, excerpts.get(r.candidate.id, []) if tier == "L2" else [])
        for r, tier in zip(chosen, tiers, strict=True)
    ]
    index = [m.label for m in memories if m.tier_used == "L0"]
    return memories, index, used


# Two passages are the same text when their first characters are (an excerpt is read cut short).
_SAME_TEXT_CHARS = 200


def _passage(text: str) -> str:
    return " ".join(text.split())[:_SAME_TEXT_CHARS]


def shown_once(chosen: list[Ranked], excerpts: dict) -> tuple[list[Ranked], dict]:
    """Each passage in the block once (S8): a kept turn is shown under the better-ranked memory
    whose excerpt it is, or alone when it ranks first, and without its session's header (its own
    text says when and who; the header is there to be searched); an excerpt already shown above
    (a turn two concepts state) is not shown again. Returns the memories to show (a kept turn
    shown already left out) and their excerpts without repeats."""
    seen: set[str] = set()
    kept: list[Ranked] = []
    shown: dict = {}
    for r in chosen:
        own = _passage(r.candidate.payload["definition"])
        verbatim = is_verbatim_key(r.candidate.payload.get("norm_key") or "")
        if verbatim and own in seen:  # shown already, under a memory that states it
            continue
        kept.append(r)
        seen.add(own)
        # a verbatim memory's excerpts are its context (a session's header, the turn it follows, a
        # document's header): searchable, not what was said
        mine = [] if verbatim else [e for e in excerpts.get(r.candidate.id, []) if _passage(e) not in seen]
        seen.update(_passage(e) for e in mine)
        if mine:
            shown[r.candidate.id] = mine
    return kept, shown


# Words every session header holds (``contextos.conversations.session_header``): they name no session.
_HEADER_WORDS = frozenset(stems("Session on about"))


def said_in_a_session_about(wanted: frozenset[str] | set[str], row: dict) -> bool:
    """Whether a kept turn's session is about the query: its header (one of the turn's excerpts:
    the session, its day, its topics; not the turn it follows) holds a content word of the query
    (``wanted``, its stems). Such a turn is never cut by the relevance floor (S6): "which city is
    the offsite in" is answered by the turn "Lisbon, because most of the group can fly there" of
    the offsite session, although no word of the question is in it."""
    if not wanted or not is_verbatim_key(row.get("norm_key") or ""):
        return False
    texts, keys = row.get("excerpts") or [], row.get("excerpt_stems") or []
    held: set[str] = set()
    for i, text in enumerate(texts):
        if text.startswith(SESSION_HEADER_PREFIX):  # the stems stored with it (migration 0031), else its own
            held.update(keys[i].split() if i < len(keys) and keys[i] is not None else stems(text))
    return bool((held - _HEADER_WORDS) & wanted)


def updates_of(candidates: list[Candidate]) -> list[tuple[UUID, UUID]]:
    """(newer, older) for every candidate the contradiction gate linked to a newer statement that
    reports a change to it (its ``updated_by``, migration 0022)."""
    return [
        (c.payload["updated_by"], c.id)
        for c in candidates
        if isinstance(c.payload, dict) and c.payload.get("updated_by") is not None
    ]


def near_miss(r: Ranked, reason: str) -> NearMiss:
    return NearMiss.model_validate(
        {
            "id": r.candidate.id,
            "label": r.candidate.payload["label"],
            "relevance": r.score.calibrated,
            "score": r.score.relevance,
            "reason": reason,
        }
    )


def near_misses(left_out: list[NearMiss], per_reason: int) -> list[NearMiss]:
    """The best few left-out candidates of each reason (by calibrated relevance), reasons apart."""
    by_reason: dict[str, list[NearMiss]] = {}
    for miss in left_out:
        by_reason.setdefault(miss.reason, []).append(miss)
    return [m for misses in by_reason.values() for m in sorted(misses, key=lambda m: -m.relevance)[:per_reason]]


def sources_of(ranked: list[Ranked]) -> dict[UUID, list[str]]:
    """memory id → its distinct sources, as the candidate pool read them."""
    return {r.candidate.id: sorted(s for s in r.candidate.payload.get("sources") or [] if s) for r in ranked}


def archived_evidence(archive: dict, excerpt_chars: int) -> dict:
    """What a cold memory brought back shows, as a hot one would: its definition, and as L2
    excerpts its occurrences' other definitions and source excerpts (with their stems), so the
    turns an archived concept kept still answer the query that woke it."""
    definition = (archive.get("memory") or {}).get("definition", "")
    excerpts: list[str] = []
    excerpt_stems: list[str | None] = []
    for item in archive.get("items") or []:
        if item.get("definition") and item["definition"] != definition:
            excerpts.append(item["definition"][:excerpt_chars])
            excerpt_stems.append(item.get("definition_stems"))
        texts, text_stems = item.get("excerpts") or [], item.get("excerpt_stems") or []
        excerpts += [text[:excerpt_chars] for text in texts]
        excerpt_stems += [text_stems[i] if i < len(text_stems) else None for i in range(len(texts))]
    return {"definition": definition, "excerpts": excerpts, "excerpt_stems": excerpt_stems}


def scored(r: Ranked, tier: Tier, sources: dict, excerpts: list[str] | None = None) -> ScoredMemory:
    row = r.candidate.payload
    # Validated from a plain dict: pydantic-core does that ~3x faster than `model_construct` builds
    # a model in Python (for ~20 memories a query, the read path's largest Python cost).
    return ScoredMemory.model_validate(
        {
            "id": row["id"],
            "label": row["label"],
            "definition": row["definition"] if tier != "L0" else "",
            "type": row["type"],
            "importance": row["importance"],
            "band": row["band"],
            "tier_used": tier,
            "source_ids": sources.get(row["id"], []),
            "excerpts": excerpts or [],
            "always_load": bool(row.get("always_load")),
            "score": r.score.fields(),
            "said_at": said_at(row, sources.get(row["id"], [])),
            "history": [],
            "relevance": r.score.calibrated,
        }
    )


def said_at(row: dict, sources: list[str]) -> datetime | None:
    """When a memory from a conversation was said (its ``valid_from``: a turn's own time, or its
    flush's), so a "when" question finds the date beside the answer. Document knowledge has no
    such moment worth the tokens."""
    if any(s.startswith("session:") for s in sources):
        return row.get("valid_from")
    return None


def heading(m: ScoredMemory) -> str:
    """``type`` or ``type, said <date>``: what the block says about a memory besides its text."""
    return f"{m.type}, said {m.said_at:%Y-%m-%d}" if m.said_at is not None else m.type


def assemble(query: str, memories: list[ScoredMemory], index: list[str], fmt: str) -> str:
    """Attention positioning (S6.7): always_load memories, rules and standing preferences first,
    then the rest by relevance, the L0 index last."""
    full = [m for m in memories if m.tier_used != "L0"]
    first = [m for m in full if m.always_load or m.type in ("rule", "preference")]
    leading = {m.id for m in first}
    ordered = first + [m for m in full if m.id not in leading]
    if fmt == "json":
        return json.dumps(
            {
                "memories": [
                    {"label": m.label, "type": m.type, "definition": m.definition, "excerpts": m.excerpts}
                    | ({"said_at": m.said_at.isoformat()} if m.said_at is not None else {})
                    for m in ordered
                ],
                "index": index,
            }
        )
    if fmt == "plain":
        lines = [f"{m.label} ({heading(m)}): {m.definition}" + "".join(f" | {e}" for e in m.excerpts) for m in ordered]
        if index:
            lines.append("Also known: " + "; ".join(index))
        return "\n".join(lines)
    lines = ["## Relevant memory", ""]
    for m in ordered:
        lines.append(f"- **{m.label}** ({heading(m)}): {m.definition}")
        lines += [f"  > {excerpt}" for excerpt in m.excerpts]
    if index:
        lines += ["", "## Also in memory", "", ", ".join(index)]
    return "\n".join(lines)
