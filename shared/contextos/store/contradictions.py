"""The contradiction gate's SQL (S7): each candidate's neighbours (the pairs the gate's service
judges), and the outcome it decided, applied (superseded memories closed, pointers, edges, audit).

The gate runs inside the admission transaction, under the tenant's row lock
(``contextos.store.locks``): the memories it compares with cannot change under it, and two
concurrent admissions of contradicting statements are judged one after the other, so the one
admitted later (the higher ingestion sequence) always wins and exactly one stays active. The
judge itself is called by ``contextos.services.contradiction``; no store calls a model.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

import numpy as np
from contextos.config import GovernanceSettings
from contextos.judgements import GateOutcome
from contextos.lsh import max_hamming, sketch
from contextos.models import MemoryCandidate
from contextos.normalization import VERBATIM_KEY_PREFIX, is_verbatim_key, turn_words
from contextos.scopes import key_owner
from contextos.store.audit import write_audit
from contextos.store.bands import band_sketch
from contextos.store.batch import Writes
from contextos.store.db import Conn
from contextos.store.dialect import Dialect
from contextos.store.scopes import key_owner_sql
from pgvector import Vector

UPDATE_REASON = "the newer statement reports a change to the same subject; both kept, the newer ranks first"


class TransactionGateReads:
    """``contextos.ports.gate.GateReads`` in one open transaction of one tenant."""

    def __init__(self, conn: Conn, tenant_id: str, dialect: Dialect) -> None:
        self.conn, self.tenant_id, self.dialect = conn, tenant_id, dialect
        self.probes_cold = dialect.keeps_subject_terms()

    def neighbours(
        self,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        hot_memories: int,
        settings: GovernanceSettings,
        floors: Sequence[float] | None = None,
    ) -> list[dict[str, Any]]:
        return neighbours(
            self.conn, self.tenant_id, candidates, final_keys, hot_memories, self.dialect, settings, floors
        )

    def cold_sharing_words(
        self, candidates: Sequence[MemoryCandidate], settings: GovernanceSettings
    ) -> list[dict[str, Any]]:
        return cold_sharing_words(self.conn, self.tenant_id, candidates, settings)

    def turns_near(self, candidates: Sequence[MemoryCandidate], settings: GovernanceSettings) -> list[dict[str, Any]]:
        return turns_near(self.conn, self.tenant_id, candidates, settings)


# A kept turn's key (``contextos.normalization.is_verbatim_key``): never a neighbour the gate judges.
NOT_VERBATIM = "{0}.norm_key NOT LIKE '" + VERBATIM_KEY_PREFIX + "%%'"
VERBATIM_ONLY = "{0}.norm_key LIKE '" + VERBATIM_KEY_PREFIX + "%%'"


def same_owner(alias: str) -> str:
    """A memory ``alias`` belongs to the probe ``p``'s owner (S11: one user's memory is never judged
    against, nor superseded by, another's)."""
    return f"{key_owner_sql(alias + '.norm_key')} IS NOT DISTINCT FROM p.owner"


def insert_subject_terms(
    conn: Writes,
    tenant_id: str,
    memory_ids: Sequence[UUID],
    keys: Sequence[str],
    band_keys: Sequence[Sequence[int]] | None = None,
) -> None:
    """The subject terms of memories created in this transaction (plain inserts: their rows
    cannot exist yet), each with its memory's LSH sketch (migration 0037): from ``band_keys`` when
    given (the vectors are written by the same statement), else from the vector rows already there.
    PostgreSQL only: CockroachDB's gate scans exactly (migration 0021)."""
    if not memory_ids:
        return
    if band_keys is not None:
        conn.execute(
            """INSERT INTO memory_subject_terms (tenant_id, term, memory_id, sketch)
               SELECT %s, t.term, u.memory_id, u.sketch::bit(256)
               FROM unnest(%s::uuid[], %s::text[], %s::text[]) AS u(memory_id, norm_key, sketch)
               CROSS JOIN LATERAL unnest(contextos_subject_terms(u.norm_key)) AS t(term)""",
            [tenant_id, list(memory_ids), list(keys), [band_sketch(k) for k in band_keys]],
        )
        return
    conn.execute(
        """INSERT INTO memory_subject_terms (tenant_id, term, memory_id, sketch)
           SELECT %s, t.term, u.memory_id,
                  (SELECT contextos_band_sketch(v.band_keys) FROM memory_vectors v
                   WHERE v.tenant_id = %s AND v.memory_id = u.memory_id)
           FROM unnest(%s::uuid[], %s::text[]) AS u(memory_id, norm_key)
           CROSS JOIN LATERAL unnest(contextos_subject_terms(u.norm_key)) AS t(term)""",
        [tenant_id, tenant_id, list(memory_ids), list(keys)],
    )


def hot_count(conn: Conn, tenant_id: str) -> int:
    """The tenant's hot memories as now (no lock): zero means nothing to judge against."""
    row = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant_id]).fetchone()
    return int(row["hot_memories"]) if row else 0


def neighbours(
    conn: Conn,
    tenant_id: str,
    candidates: Sequence[MemoryCandidate],
    final_keys: Sequence[str],
    hot_memories: int,
    dialect: Dialect,
    settings: GovernanceSettings,
    floors: Sequence[float] | None = None,
) -> list[dict[str, Any]]:
    """Per candidate: its top-k nearest active memories at or above the similarity floor, plus the
    active memory holding its final key (what it would merge into); ``judged`` says which the
    judge sees (the rest lie between the update floor and the judge's). ``floors``: per candidate,
    the lowest similarity its caller reads (a candidate that reports no change cannot update a
    neighbour, so below the judge's floor nothing of it is read); never below the settings' own.

    A small tenant (and every tenant of an engine without the subject index) is scanned exactly. A
    large one is probed by subject in one statement for the batch (``_nearest_by_subject``)."""
    cfg = settings
    k = cfg.contradiction_top_k
    # A kept turn is what was said: it supersedes nothing and nothing supersedes it (S8).
    judged = [i for i, c in enumerate(candidates) if not is_verbatim_key(c.norm_key)]
    if not judged:
        return []
    if len(judged) < len(candidates):
        rows = neighbours(
            conn,
            tenant_id,
            [candidates[i] for i in judged],
            [final_keys[i] for i in judged],
            hot_memories,
            dialect,
            settings,
            [floors[i] for i in judged] if floors is not None else None,
        )
        return [r | {"idx": judged[r["idx"]]} for r in rows]
    params = {
        "tenant": tenant_id,
        "idx": list(range(len(candidates))),
        "embs": [Vector(c.embedding) for c in candidates],
        "keys": list(final_keys),
        "owners": [key_owner(c.norm_key) for c in candidates],
        "k": k,
    }
    floor = cfg.contradiction_similarity_floor
    # below the judge's floor, a neighbour is still checked for an update (the gate's update links)
    lowest = min(floor, cfg.update_similarity_floor) if cfg.update_links else floor
    exact = not dialect.keeps_subject_terms() or hot_memories <= cfg.contradiction_exact_scan_max_rows
    lows = [lowest] * len(candidates)
    if exact:
        rows = _nearest(conn, params, exact=dialect.ann_post_filters())
    else:
        lows = [max(lowest, f) for f in floors] if floors is not None else lows
        lsh = sketch(np.asarray([c.embedding for c in candidates], dtype=np.float32))
        rows = _nearest_by_subject(
            conn,
            params
            | {
                "own": [c.norm_key for c in candidates],
                "rows": cfg.contradiction_subject_rows,
                "lowest": lows,
                "sketches": [band_sketch(keys) for keys in lsh.band_keys],
                "max_distance": [max_hamming(low) for low in lows],
            },
        )
    best: dict[tuple[int, UUID], dict] = {}
    for row in rows:
        if row["similarity"] < lows[row["idx"]] and not row["key_match"]:
            continue
        key = (row["idx"], row["id"])
        if key not in best or row["similarity"] > best[key]["similarity"]:
            best[key] = row | {"judged": row["similarity"] >= floor or row["key_match"]}
    return sorted(best.values(), key=lambda r: (r["idx"], -r["similarity"], r["ingest_seq"]))


def _nearest_by_subject(conn: Conn, params: dict[str, Any]) -> list[dict[str, Any]]:
    """A large tenant, one statement for the whole batch: per candidate, the k most similar of
    the active memories that share a subject term with it (a pair of its key's words,
    ``contextos_subject_terms``; btree lookups in ``memory_subject_terms``, migration 0021), at
    most ``rows`` of them, and the active memory holding its final key. Only statements about
    the same subject can contradict (S7), and no ANN probe runs per concept.

    Each candidate's terms are computed once, and each term is its own primary-key range read
    in key order (fenced with OFFSET 0), so a common term costs ``rows`` index entries and the
    choice among more than ``rows`` sharing memories is deterministic (the lowest ids). Left to
    the planner, the LIMIT invited a walk of the tenant's whole term index (or table), calling
    the term function on every row. The sharing memories are ranked on their vectors alone
    (fenced, sorted), and each memory row is read in that order only until k pass the active and
    owner checks, not for every sharing memory. Those below the candidate's ``lowest`` are left out
    before the ranking: the caller drops them from the top k anyway, so the rows kept are the same.

    Which sharing memories are far is mostly known from the term index itself: each term row
    carries its memory's LSH sketch (migration 0037), and one whose sketch differs from the
    candidate's in more than its ``max_distance`` bits (``max_hamming`` of its ``lowest``: mean + 4
    sigma of a pair at that similarity) is dropped before its vector row is read. The choice of the ``rows`` lowest
    ids comes first, unchanged; the filter only skips vectors that would fail the cosine (a pair
    at ``lowest`` itself passes with probability 1 - 3e-5, and above the judge's floor, 0.6, it is
    5.5 sigma inside). A term row without a sketch is read as before."""
    return conn.execute(
        f"""WITH probe AS MATERIALIZED (
               SELECT t.idx, t.embedding, t.final_key, t.own_key, t.owner, t.sketch::bit(256) AS sketch,
                      t.lowest, t.max_distance
               FROM unnest(%(idx)s::int[], %(embs)b::vector[], %(keys)s::text[], %(own)s::text[],
                           %(owners)s::text[], %(sketches)s::text[], %(lowest)s::float8[], %(max_distance)s::int[])
                   AS t(idx, embedding, final_key, own_key, owner, sketch, lowest, max_distance)
           ),
           terms AS MATERIALIZED (
               SELECT DISTINCT p.idx, t.term FROM probe p
               CROSS JOIN LATERAL unnest(contextos_subject_terms(p.own_key)) AS t(term)
           ),
           shared AS MATERIALIZED (
               SELECT p.idx, s.memory_id
               FROM probe p CROSS JOIN LATERAL (
                   SELECT DISTINCT st.memory_id, st.sketch
                   FROM terms t CROSS JOIN LATERAL (
                       SELECT st.memory_id, st.sketch FROM memory_subject_terms st
                       WHERE st.tenant_id = %(tenant)s AND st.term = t.term
                       ORDER BY st.memory_id LIMIT %(rows)s OFFSET 0
                   ) st
                   WHERE t.idx = p.idx
                   ORDER BY st.memory_id LIMIT %(rows)s
               ) s
               WHERE s.sketch IS NULL OR bit_count(s.sketch # p.sketch) <= p.max_distance
           ),
           found AS MATERIALIZED (
               SELECT p.idx, n.memory_id, 1.0 - n.distance AS similarity, false AS key_match
               FROM probe p CROSS JOIN LATERAL (
                   SELECT r.memory_id, r.distance
                   FROM (
                       SELECT s.memory_id, v.embedding <=> p.embedding AS distance
                       FROM shared s
                       JOIN memory_vectors v ON v.tenant_id = %(tenant)s AND v.memory_id = s.memory_id AND v.searchable
                       WHERE s.idx = p.idx AND 1.0 - (v.embedding <=> p.embedding) >= p.lowest
                       ORDER BY 2 OFFSET 0
                   ) r
                   JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = r.memory_id AND m.state = 'active'
                    AND {same_owner("m")}
                   ORDER BY r.distance LIMIT %(k)s
               ) n
               UNION ALL
               SELECT p.idx, m.id, COALESCE(1.0 - (v.embedding <=> p.embedding), 1.0), true
               FROM probe p
               JOIN memories m ON m.tenant_id = %(tenant)s AND m.state = 'active' AND m.norm_key = p.final_key
               LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id
           )
           SELECT f.idx, m.id, m.norm_key, m.label, m.definition, m.ingest_seq, f.similarity, f.key_match
           FROM found f
           JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = f.memory_id AND m.state = 'active'""",
        params,
    ).fetchall()


def turns_near(
    conn: Conn, tenant_id: str, candidates: Sequence[MemoryCandidate], settings: GovernanceSettings
) -> list[dict[str, Any]]:
    """Per kept turn, the k nearest active kept turns of its owner at or above the update floor,
    never judged (``judged`` false): a later turn may only be linked as an update of an earlier
    one (S8: both stay, the newer ranks first), never supersede it. Exact: the turns of one
    owner that report a change are few."""
    if not candidates:
        return []
    params = {
        "tenant": tenant_id,
        "idx": list(range(len(candidates))),
        "embs": [Vector(c.embedding) for c in candidates],
        "keys": [c.norm_key for c in candidates],
        "owners": [key_owner(c.norm_key) for c in candidates],
        "k": settings.contradiction_top_k,
    }
    rows = _nearest(conn, params, exact=True, among=VERBATIM_ONLY, with_key=False)
    return [r | {"judged": False} for r in rows if r["similarity"] >= settings.update_similarity_floor]


def _nearest(
    conn: Conn, params: dict[str, Any], *, exact: bool, among: str = NOT_VERBATIM, with_key: bool = True
) -> list[dict[str, Any]]:
    """The k nearest active memories of each probe (one statement for the batch), and the active
    memory holding each probe's key, with their cosine to the probe. ``found`` is materialized:
    inlined, the planner could rerun every probe once per memory row of the final join (31 ms
    for 18 memories, growing with the square of a small tenant)."""
    # exact: ordered by an expression no ANN index serves, so no plan of this text, cached or not,
    # filters after an index scan and comes up short (docs/design.md, Appendix A); a planner switch would not hold
    # once the statement is prepared (docs/decisions.md)
    order = "(v.embedding <=> p.embedding) + 0.0" if exact else "v.embedding <=> p.embedding"
    nearest = f"""SELECT v.memory_id, v.embedding <=> p.embedding AS distance FROM memory_vectors v
                  JOIN memories o ON o.tenant_id = v.tenant_id AND o.id = v.memory_id
                  WHERE v.tenant_id = %(tenant)s AND v.searchable AND {same_owner("o")} AND {among.format("o")}
                  ORDER BY {order} LIMIT %(k)s"""
    holding_key = """UNION ALL
                   SELECT p.idx, m.id, COALESCE(1.0 - (v.embedding <=> p.embedding), 1.0), true
                   FROM probe p
                   JOIN memories m ON m.tenant_id = %(tenant)s AND m.state = 'active' AND m.norm_key = p.final_key
                   LEFT JOIN memory_vectors v ON v.tenant_id = m.tenant_id AND v.memory_id = m.id"""
    return conn.execute(
        f"""WITH probe AS (
                   SELECT * FROM unnest(%(idx)s::int[], %(embs)b::vector[], %(keys)s::text[], %(owners)s::text[])
                       AS t(idx, embedding, final_key, owner)
               ),
               found AS MATERIALIZED (
                   SELECT p.idx, n.memory_id, 1.0 - n.distance AS similarity, false AS key_match
                   FROM probe p CROSS JOIN LATERAL ({nearest}) n
                   {holding_key if with_key else ""}
               )
               SELECT f.idx, m.id, m.norm_key, m.label, m.definition, m.ingest_seq, f.similarity, f.key_match
               FROM found f
               JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = f.memory_id AND m.state = 'active'""",
        params,
    ).fetchall()


def cold_sharing_words(
    conn: Conn, tenant_id: str, candidates: Sequence[MemoryCandidate], settings: GovernanceSettings
) -> list[dict[str, Any]]:
    """Per candidate, the k cold stubs nearest by cosine among those whose kept lexemes share two
    of its definition's (the stub GIN index, at most ``contradiction_subject_rows`` looked at),
    with their label and lexemes: a kept turn's among the kept turns, any other's among the rest."""
    cfg = settings
    return conn.execute(
        f"""WITH probe AS (
               SELECT p.idx, p.embedding, p.owner, p.turn, (
                          SELECT string_agg('(' || contextos_lexeme_literal(a.l) || ' & '
                                            || contextos_lexeme_literal(b.l) || ')', ' | ')
                          FROM unnest(tsvector_to_array(to_tsvector('english', p.body))) a(l)
                          JOIN unnest(tsvector_to_array(to_tsvector('english', p.body))) b(l) ON a.l < b.l
                      )::tsquery AS pairs
               FROM unnest(%(idx)s::int[], %(embs)b::vector[], %(bodies)s::text[], %(owners)s::text[],
                           %(turns)s::bool[])
                   AS p(idx, embedding, body, owner, turn)
           )
           SELECT p.idx, n.id, n.label, n.lexemes, n.similarity
           FROM probe p CROSS JOIN LATERAL (
               SELECT m.id, m.label, tsvector_to_array(m.stub_tsv) AS lexemes,
                      1.0 - (v.embedding <=> p.embedding) AS similarity
               FROM (SELECT c.id FROM memories c
                     WHERE c.tenant_id = %(tenant)s AND c.tier = 'cold' AND c.superseded_by IS NULL
                       AND c.stub_tsv @@ p.pairs AND {same_owner("c")}
                       AND (c.norm_key LIKE '{VERBATIM_KEY_PREFIX}%%') = p.turn
                     LIMIT %(rows)s) s
               JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = s.id
               JOIN memory_vectors v ON v.tenant_id = %(tenant)s AND v.memory_id = s.id
               ORDER BY v.embedding <=> p.embedding LIMIT %(k)s
           ) n
           WHERE p.pairs IS NOT NULL""",
        {
            "tenant": tenant_id,
            "idx": [i for i, _ in enumerate(candidates)],
            "embs": [Vector(c.embedding) for c in candidates],
            "bodies": [turn_words(c.definition) if is_verbatim_key(c.norm_key) else c.definition for c in candidates],
            "owners": [key_owner(c.norm_key) for c in candidates],
            "turns": [is_verbatim_key(c.norm_key) for c in candidates],
            "rows": cfg.contradiction_subject_rows,
            "k": cfg.contradiction_top_k,
        },
    ).fetchall()


def close_superseded(conn: Conn, tenant_id: str, outcome: GateOutcome) -> None:
    """Before the upsert: the contradicted memories stop being active (freeing their keys) and
    their validity closes now, which is the newer memory's valid_from (one transaction, one now())."""
    ids = outcome.superseded_ids
    if not ids:
        return
    conn.execute(
        """UPDATE memories SET state = 'superseded', valid_to = now(), superseded_at = now(), updated_at = now()
           WHERE tenant_id = %s AND id = ANY(%s) AND state = 'active'""",
        [tenant_id, ids],
    )
    conn.execute(
        "UPDATE memory_vectors SET searchable = false WHERE tenant_id = %s AND memory_id = ANY(%s)",
        [tenant_id, ids],
    )
    conn.execute(
        "UPDATE tenants SET hot_memories = GREATEST(hot_memories - %s, 0) WHERE tenant_id = %s",
        [len(ids), tenant_id],
    )


def link(
    conn: Conn,
    tenant_id: str,
    outcome: GateOutcome,
    new_ids: Sequence[UUID],
    *,
    actor: str,
) -> None:
    """After the upsert: pointers forward, ``supersedes`` and ``corroborates`` edges, audit rows."""
    sup = [(new_ids[i], old) for i, olds in sorted(outcome.supersedes.items()) for old in olds]
    cor = [(new_ids[i], old) for i, olds in sorted(outcome.corroborates.items()) for old in olds]
    upd = [(new_ids[i], old) for i, olds in sorted(outcome.updates.items()) for old in olds if new_ids[i] != old]
    if upd:
        conn.execute(
            """UPDATE memories m SET updated_by = s.new_id
               FROM unnest(%s::uuid[], %s::uuid[]) AS s(new_id, old_id)
               WHERE m.tenant_id = %s AND m.id = s.old_id""",
            [[n for n, _ in upd], [o for _, o in upd], tenant_id],
        )
    if sup:
        conn.execute(
            """UPDATE memories m SET superseded_by = s.new_id
               FROM unnest(%s::uuid[], %s::uuid[]) AS s(new_id, old_id)
               WHERE m.tenant_id = %s AND m.id = s.old_id""",
            [[n for n, _ in sup], [o for _, o in sup], tenant_id],
        )
    # Two candidates merged into one memory judge the same neighbours: one edge and one audit entry each.
    edges = list(
        dict.fromkeys(
            [(n, o, "supersedes") for n, o in sup]
            + [(n, o, "corroborates") for n, o in cor]
            # a cold stub's edges live in its cold object: its pointer is enough
            + [(n, o, "contradicts") for n, o in upd if o not in outcome.cold_updates]
        )
    )
    if edges:
        conn.execute(
            """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
               SELECT %s, s, d, t, 1.0 FROM unnest(%s::uuid[], %s::uuid[], %s::text[]) AS e(s, d, t)
               WHERE s <> d
               ON CONFLICT (tenant_id, src_id, dst_id, type) DO UPDATE SET updated_at = now()""",
            [tenant_id, [e[0] for e in edges], [e[1] for e in edges], [e[2] for e in edges]],
        )
    index_of = {(new_ids[i], old): i for i, olds in outcome.supersedes.items() for old in olds}
    index_of |= {(new_ids[i], old): i for i, olds in outcome.corroborates.items() for old in olds}
    index_of |= {(new_ids[i], old): i for i, olds in outcome.updates.items() for old in olds}
    actions = {"supersedes": "superseded", "corroborates": "corroborated", "contradicts": "update_linked"}
    cold = [(n, o, "contradicts") for n, o in upd if o in outcome.cold_updates]
    entries: list[dict[str, Any]] = []
    for new_id, old_id, kind in edges + cold:
        judgement = outcome.judgements.get((index_of[(new_id, old_id)], old_id))
        update = kind == "contradicts"
        entries.append(
            {
                "actor": actor,
                "action": actions[kind],
                "memory_id": old_id,
                "reason": UPDATE_REASON if update else (judgement.reason if judgement else None),
                "details": {
                    "by": str(new_id),
                    "judge": outcome.judge_id,
                    "confidence": judgement.confidence if judgement else None,
                },
            }
        )
    write_audit(conn, tenant_id, entries)
