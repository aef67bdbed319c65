"""Governance in the store (S7, S3): the review queue, the contradiction gate, history and the audit chain.

The contradiction gate runs inside the admission transaction, under the tenant's row lock
(``MemoryStore._lock_tenant``): the memories it compares with cannot change under it, and two
concurrent admissions of contradicting statements are judged one after the other, so the one
admitted later (the higher ingestion sequence) always wins and exactly one stays active.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from contextos.config import GovernanceSettings
from contextos.errors import NotFound, PermanentError
from contextos.governance_models import HeldCandidate
from contextos.judge import Judge, Judgement, JudgePair, Verdict
from contextos.judge.local import reports_a_change, reports_an_update, reports_an_update_of_lexemes
from contextos.models import MemoryCandidate
from contextos.scopes import Scope, key_owner
from contextos.store.db import Database
from contextos.store.scopes import key_owner_sql
from pgvector import Vector
from psycopg.types.json import Jsonb

# (candidate index, memory id, the memory's text as judged) → (judgement, the judge failed)
JudgementCache = dict[tuple[int, UUID, str], tuple[Judgement, bool]]


UPDATE_REASON = "the newer statement reports a change to the same subject; both kept, the newer ranks first"


def same_owner(alias: str) -> str:
    """A memory ``alias`` belongs to the probe ``p``'s owner (S11: one user's memory is never judged
    against, nor superseded by, another's)."""
    return f"{key_owner_sql(alias + '.norm_key')} IS NOT DISTINCT FROM p.owner"


def _premise(row: dict) -> str:
    """The stored statement as the judge sees it (OLDER)."""
    return f"{row['label']}: {row['definition']}"


def insert_subject_terms(conn: Any, tenant_id: str, memory_ids: Sequence[UUID], keys: Sequence[str]) -> None:
    """The subject terms of memories created in this transaction (plain inserts: their rows
    cannot exist yet). PostgreSQL only: CockroachDB's gate scans exactly (migration 0021)."""
    if not memory_ids:
        return
    conn.execute(
        """INSERT INTO memory_subject_terms (tenant_id, term, memory_id)
           SELECT %s, t.term, u.memory_id FROM unnest(%s::uuid[], %s::text[]) AS u(memory_id, norm_key)
           CROSS JOIN LATERAL unnest(contextos_subject_terms(u.norm_key)) AS t(term)""",
        [tenant_id, list(memory_ids), list(keys)],
    )


def write_audit(conn: Any, tenant_id: str, entries: Sequence[dict]) -> None:
    """Append audit rows in one statement (the database chains them: migration 0011)."""
    if not entries:
        return
    conn.execute(
        """INSERT INTO audit_log (tenant_id, actor, action, memory_id, reason, details)
           SELECT %s, a, c, m, r, d FROM unnest(%s::text[], %s::text[], %s::uuid[], %s::text[], %s::jsonb[])
               AS t(a, c, m, r, d)""",
        [
            tenant_id,
            [e["actor"] for e in entries],
            [e["action"] for e in entries],
            [e.get("memory_id") for e in entries],
            [e.get("reason") for e in entries],
            [Jsonb(e.get("details") or {}) for e in entries],
        ],
    )


@dataclass
class GateOutcome:
    """What the contradiction gate decided for one admission batch."""

    # candidate index → ids of the memories it supersedes / corroborates
    supersedes: dict[int, list[UUID]] = field(default_factory=dict)
    corroborates: dict[int, list[UUID]] = field(default_factory=dict)
    # candidate index → ids of the memories (hot, or cold stubs) whose subject it reports a change to,
    # without a contradiction verdict: linked for ordering, never superseded
    updates: dict[int, list[UUID]] = field(default_factory=dict)
    cold_updates: set[UUID] = field(default_factory=set)
    judgements: dict[tuple[int, UUID], Judgement] = field(default_factory=dict)
    keys: dict[UUID, str] = field(default_factory=dict)  # norm_key of every memory judged against
    judged: int = 0
    judged_under_lock: int = 0  # pairs prejudge had not seen (or that changed since)
    judge_failures: int = 0

    @property
    def superseded_ids(self) -> list[UUID]:
        return sorted({m for ids in self.supersedes.values() for m in ids})


@dataclass
class ContradictionGate:
    """Each admitted candidate against its top-k nearest active memories (S7), through the ``Judge``."""

    judge: Judge
    settings: GovernanceSettings
    prejudges: bool = True  # judge outside the lock first (worth it for slow judges only)

    def prejudge(self, db: Database, tenant_id: str, candidates: Sequence[MemoryCandidate]) -> JudgementCache:
        """Outside the tenant lock: judge each candidate against its neighbours as they are now.
        Under the lock, ``judge_batch`` then calls the judge only for pairs that appeared or changed
        meanwhile, so slow judges (Bedrock) do not hold a tenant's admissions up."""
        if not candidates:
            return {}
        with db.tenant_tx(tenant_id) as conn:
            row = conn.execute("SELECT hot_memories FROM tenants WHERE tenant_id = %s", [tenant_id]).fetchone()
            hot = int(row["hot_memories"]) if row else 0
            if not hot:
                return {}
            keys = [c.norm_key for c in candidates]
            pairs = [
                (r["idx"], r)
                for r in self._neighbours(conn, tenant_id, candidates, keys, hot, db.dialect.name)
                if r["judged"]
            ]
        judged = self._judge_pairs(candidates, pairs)
        return {(idx, row["id"], _premise(row)): verdict for (idx, row), verdict in zip(pairs, judged, strict=True)}

    def judge_batch(
        self,
        conn: Any,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        *,
        hot_memories: int,
        dialect: str = "postgres",
        cache: JudgementCache | None = None,
    ) -> GateOutcome:
        """Judge every candidate against its nearest active memories (and the memory its key would
        merge into). Runs under the tenant lock, before the upsert, so the batch's own new memories
        are not compared; pairs judged by ``prejudge`` on the same texts are not asked again."""
        outcome = GateOutcome()
        if not candidates:
            return outcome
        cache = cache or {}
        neighbours = (
            self._neighbours(conn, tenant_id, candidates, final_keys, hot_memories, dialect) if hot_memories else []
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
            self._link_updates(conn, tenant_id, candidates, final_keys, neighbours, outcome, claimed, dialect)
        return outcome

    def _link_updates(
        self,
        conn: Any,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        neighbours: Sequence[dict],
        outcome: GateOutcome,
        claimed: set[UUID],
        dialect: str,
    ) -> None:
        """The neighbours (hot, and on PostgreSQL the cold stubs that share two words with it) that a
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
            if reports_an_update(row["definition"], candidates[idx].definition):
                claimed.add(memory_id)
                outcome.updates.setdefault(idx, []).append(memory_id)
        # Only a candidate that reports a change can update anything: the cold probe asks for those.
        cued = [i for i, c in enumerate(candidates) if reports_a_change(c.definition)]
        if dialect != "postgres" or not cued:
            return
        for row in self._cold_sharing_words(conn, tenant_id, [candidates[i] for i in cued]):
            idx, memory_id = cued[row["idx"]], row["id"]
            if memory_id in claimed or row["similarity"] < self.settings.update_similarity_floor:
                continue
            if reports_an_update_of_lexemes(row["label"], row["lexemes"] or [], candidates[idx].definition):
                claimed.add(memory_id)
                outcome.updates.setdefault(idx, []).append(memory_id)
                outcome.cold_updates.add(memory_id)

    def _cold_sharing_words(self, conn: Any, tenant_id: str, candidates: Sequence[MemoryCandidate]) -> list[dict]:
        """Per candidate, the k cold stubs nearest by cosine among those whose kept lexemes share two
        of its definition's (the stub GIN index, at most ``contradiction_subject_rows`` looked at),
        with their label and lexemes."""
        cfg = self.settings
        return conn.execute(
            f"""WITH probe AS (
                   SELECT p.idx, p.embedding, p.owner, (
                              SELECT string_agg('(' || contextos_lexeme_literal(a.l) || ' & '
                                                || contextos_lexeme_literal(b.l) || ')', ' | ')
                              FROM unnest(tsvector_to_array(to_tsvector('english', p.body))) a(l)
                              JOIN unnest(tsvector_to_array(to_tsvector('english', p.body))) b(l) ON a.l < b.l
                          )::tsquery AS pairs
                   FROM unnest(%(idx)s::int[], %(embs)b::vector[], %(bodies)s::text[], %(owners)s::text[])
                       AS p(idx, embedding, body, owner)
               )
               SELECT p.idx, n.id, n.label, n.lexemes, n.similarity
               FROM probe p CROSS JOIN LATERAL (
                   SELECT m.id, m.label, tsvector_to_array(m.stub_tsv) AS lexemes,
                          1.0 - (v.embedding <=> p.embedding) AS similarity
                   FROM (SELECT c.id FROM memories c
                         WHERE c.tenant_id = %(tenant)s AND c.tier = 'cold' AND c.superseded_by IS NULL
                           AND c.stub_tsv @@ p.pairs AND {same_owner("c")}
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
                "bodies": [c.definition for c in candidates],
                "owners": [key_owner(c.norm_key) for c in candidates],
                "rows": cfg.contradiction_subject_rows,
                "k": cfg.contradiction_top_k,
            },
        ).fetchall()

    def _judge_pairs(
        self, candidates: Sequence[MemoryCandidate], pairs: Sequence[tuple[int, dict]]
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

    def _neighbours(
        self,
        conn: Any,
        tenant_id: str,
        candidates: Sequence[MemoryCandidate],
        final_keys: Sequence[str],
        hot_memories: int,
        dialect: str,
    ) -> list[dict]:
        """Per candidate: its top-k nearest active memories at or above the similarity floor, plus the
        active memory holding its final key (what it would merge into); ``judged`` says which the
        judge sees (the rest lie between the update floor and the judge's).

        A small tenant (and every CockroachDB tenant) is scanned exactly. A large one is probed by
        subject in one statement for the batch (``_nearest_by_subject``)."""
        cfg = self.settings
        k = cfg.contradiction_top_k
        params = {
            "tenant": tenant_id,
            "idx": list(range(len(candidates))),
            "embs": [Vector(c.embedding) for c in candidates],
            "keys": list(final_keys),
            "owners": [key_owner(c.norm_key) for c in candidates],
            "k": k,
        }
        exact = dialect != "postgres" or hot_memories <= cfg.contradiction_exact_scan_max_rows
        if exact:
            rows = self._nearest(conn, params, exact=dialect == "postgres")
        else:
            rows = self._nearest_by_subject(
                conn,
                params | {"own": [c.norm_key for c in candidates], "rows": cfg.contradiction_subject_rows},
            )
        floor = cfg.contradiction_similarity_floor
        # below the judge's floor, a neighbour is still checked for an update (`_link_updates`)
        lowest = min(floor, cfg.update_similarity_floor) if cfg.update_links else floor
        best: dict[tuple[int, UUID], dict] = {}
        for row in rows:
            if row["similarity"] < lowest and not row["key_match"]:
                continue
            key = (row["idx"], row["id"])
            if key not in best or row["similarity"] > best[key]["similarity"]:
                best[key] = row | {"judged": row["similarity"] >= floor or row["key_match"]}
        return sorted(best.values(), key=lambda r: (r["idx"], -r["similarity"], r["ingest_seq"]))

    @staticmethod
    def _nearest_by_subject(conn: Any, params: dict) -> list[dict]:
        """A large tenant, one statement for the whole batch: per candidate, the k most similar of
        the active memories that share a subject term with it (a pair of its key's words,
        ``contextos_subject_terms``; btree lookups in ``memory_subject_terms``, migration 0021), at
        most ``rows`` of them, and the active memory holding its final key. Only statements about
        the same subject can contradict (S7), and no ANN probe runs per concept.

        Each candidate's terms are computed once, and each term is its own primary-key range read
        in key order (fenced with OFFSET 0), so a common term costs ``rows`` index entries and the
        choice among more than ``rows`` sharing memories is deterministic (the lowest ids). Left to
        the planner, the LIMIT invited a walk of the tenant's whole term index (or table), calling
        the term function on every row."""
        return conn.execute(
            f"""WITH probe AS MATERIALIZED (
                   SELECT * FROM unnest(%(idx)s::int[], %(embs)b::vector[], %(keys)s::text[], %(own)s::text[],
                                        %(owners)s::text[])
                       AS t(idx, embedding, final_key, own_key, owner)
               ),
               terms AS MATERIALIZED (
                   SELECT DISTINCT p.idx, t.term FROM probe p
                   CROSS JOIN LATERAL unnest(contextos_subject_terms(p.own_key)) AS t(term)
               ),
               shared AS MATERIALIZED (
                   SELECT p.idx, s.memory_id
                   FROM probe p CROSS JOIN LATERAL (
                       SELECT DISTINCT st.memory_id
                       FROM terms t CROSS JOIN LATERAL (
                           SELECT st.memory_id FROM memory_subject_terms st
                           WHERE st.tenant_id = %(tenant)s AND st.term = t.term
                           ORDER BY st.memory_id LIMIT %(rows)s OFFSET 0
                       ) st
                       WHERE t.idx = p.idx
                       ORDER BY st.memory_id LIMIT %(rows)s
                   ) s
               ),
               found AS MATERIALIZED (
                   SELECT p.idx, n.memory_id, 1.0 - n.distance AS similarity, false AS key_match
                   FROM probe p CROSS JOIN LATERAL (
                       SELECT s.memory_id, v.embedding <=> p.embedding AS distance
                       FROM shared s
                       JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = s.memory_id AND m.state = 'active'
                        AND {same_owner("m")}
                       JOIN memory_vectors v ON v.tenant_id = %(tenant)s AND v.memory_id = s.memory_id AND v.searchable
                       WHERE s.idx = p.idx
                       ORDER BY v.embedding <=> p.embedding LIMIT %(k)s
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

    @staticmethod
    def _nearest(conn: Any, params: dict, *, exact: bool) -> list[dict]:
        """The k nearest active memories of each probe (one statement for the batch), and the active
        memory holding each probe's key, with their cosine to the probe. ``found`` is materialized:
        inlined, the planner could rerun every probe once per memory row of the final join (31 ms
        for 18 memories, growing with the square of a small tenant)."""
        nearest = f"""SELECT v.memory_id, v.embedding <=> p.embedding AS distance FROM memory_vectors v
                      JOIN memories o ON o.tenant_id = v.tenant_id AND o.id = v.memory_id
                      WHERE v.tenant_id = %(tenant)s AND v.searchable AND {same_owner("o")}
                      ORDER BY v.embedding <=> p.embedding LIMIT %(k)s"""
        if exact:
            conn.execute("SET LOCAL enable_indexscan = off")  # exact: never short (FIELD-NOTES)
        try:
            return conn.execute(
                f"""WITH probe AS (
                       SELECT * FROM unnest(%(idx)s::int[], %(embs)b::vector[], %(keys)s::text[], %(owners)s::text[])
                           AS t(idx, embedding, final_key, owner)
                   ),
                   found AS MATERIALIZED (
                       SELECT p.idx, n.memory_id, 1.0 - n.distance AS similarity, false AS key_match
                       FROM probe p CROSS JOIN LATERAL ({nearest}) n
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
        finally:
            if exact:
                conn.execute("SET LOCAL enable_indexscan = on")

    @staticmethod
    def close_superseded(conn: Any, tenant_id: str, outcome: GateOutcome) -> None:
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
        self,
        conn: Any,
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
        entries = []
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
                        "judge": getattr(self.judge, "model_id", "unknown"),
                        "confidence": judgement.confidence if judgement else None,
                    },
                }
            )
        write_audit(conn, tenant_id, entries)


@dataclass
class GovernanceStore:
    """The review queue, memory history and the audit chain's reads."""

    db: Database

    # -- the review queue ------------------------------------------------------------------
    @staticmethod
    def hold(
        conn: Any,
        tenant_id: str,
        held: Sequence[HeldCandidate],
        *,
        actor: str,
        document_id: UUID | None = None,
        session_id: str | None = None,
        messages: tuple[int, int] | None = None,
        scope: Scope | None = None,
    ) -> list[UUID]:
        """Put held candidates in the review queue (and nowhere else), each audit-logged.
        ``messages``: the conversation range they came from, kept so a promotion points there;
        ``scope``: a manual write's own scope, kept so the promoted memory has it (a document's
        or a session's is read from it at promotion)."""
        if not held:
            return []
        rows = conn.execute(
            """INSERT INTO review_queue (tenant_id, candidate, provenance, trust, reason, document_id, session_id)
               SELECT %s, c, p, t, r, %s, %s FROM unnest(%s::jsonb[], %s::text[], %s::float8[], %s::text[])
                   WITH ORDINALITY AS h(c, p, t, r, n)
               ORDER BY n
               RETURNING id""",
            [
                tenant_id,
                document_id,
                session_id,
                [
                    Jsonb(
                        h.candidate.model_dump(mode="json")
                        | {"signals": h.signals}
                        | ({"messages": list(messages)} if messages else {})
                        | ({"scope": scope.model_dump(mode="json")} if scope and not scope.empty else {})
                    )
                    for h in held
                ],
                [h.candidate.provenance.value for h in held],
                [h.trust for h in held],
                [h.reason for h in held],
            ],
        ).fetchall()
        ids = [r["id"] for r in rows]
        write_audit(
            conn,
            tenant_id,
            [
                {
                    "actor": actor,
                    "action": "held",
                    "reason": h.reason,
                    "details": {
                        "review_id": str(review_id),
                        "provenance": h.candidate.provenance.value,
                        "trust": h.trust,
                        "signals": h.signals,
                        **({"document_id": str(document_id)} if document_id else {}),
                        **({"session_id": session_id} if session_id else {}),
                    },
                }
                for h, review_id in zip(held, ids, strict=True)
            ],
        )
        return ids

    def review_page(
        self, tenant_id: str, *, status: str, after: tuple[datetime, UUID] | None, limit: int
    ) -> list[dict]:
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """SELECT id, candidate, provenance, trust, reason, document_id, session_id, status, decided_by,
                          decided_at, decision_reason, created_at
                   FROM review_queue
                   WHERE tenant_id = %(tenant)s AND status = %(status)s
                     AND (%(after_at)s::timestamptz IS NULL OR (created_at, id) > (%(after_at)s, %(after_id)s::uuid))
                   ORDER BY created_at, id
                   LIMIT %(limit)s""",
                {
                    "tenant": tenant_id,
                    "status": status,
                    "after_at": after[0] if after else None,
                    "after_id": after[1] if after else None,
                    "limit": limit,
                },
            ).fetchall()

    @staticmethod
    def decide(conn: Any, tenant_id: str, review_id: UUID, *, status: str, actor: str, reason: str) -> dict | None:
        """Move a pending item to promoted or rejected; None when it is not pending (or not there)."""
        row = conn.execute(
            """UPDATE review_queue SET status = %s, decided_by = %s, decided_at = now(), decision_reason = %s
               WHERE tenant_id = %s AND id = %s AND status = 'pending'
               RETURNING id, candidate, provenance, trust, document_id, session_id""",
            [status, actor, reason, tenant_id, review_id],
        ).fetchone()
        if row:
            write_audit(
                conn,
                tenant_id,
                [
                    {
                        "actor": actor,
                        "action": status,
                        "reason": reason,
                        "details": {"review_id": str(review_id), "provenance": row["provenance"]},
                    }
                ],
            )
        return row

    def review_status(self, tenant_id: str, review_id: UUID) -> str:
        with self.db.tenant_tx(tenant_id) as conn:
            row = conn.execute(
                "SELECT status FROM review_queue WHERE tenant_id = %s AND id = %s", [tenant_id, review_id]
            ).fetchone()
        if not row:
            raise NotFound(f"review item {review_id} not found")
        return row["status"]

    # -- history ---------------------------------------------------------------------------
    def history(self, tenant_id: str, memory_id: UUID) -> tuple[list[dict], list[dict]]:
        """The supersession chain through a memory (predecessors and successors), oldest first, and
        every audit entry about any version in it."""
        with self.db.tenant_tx(tenant_id) as conn:
            found = conn.execute(
                "SELECT 1 FROM memories WHERE tenant_id = %s AND id = %s", [tenant_id, memory_id]
            ).fetchone()
            if not found:
                raise NotFound(f"memory {memory_id} not found")
            versions = conn.execute(
                """WITH RECURSIVE back(id, depth) AS (
                       SELECT %(id)s::uuid, 0
                       UNION
                       SELECT m.id, b.depth + 1 FROM back b
                       JOIN memories m ON m.tenant_id = %(tenant)s AND m.superseded_by = b.id
                       WHERE b.depth < 1000
                   ),
                   fwd(id, depth) AS (
                       SELECT %(id)s::uuid, 0
                       UNION
                       SELECT m.superseded_by, f.depth + 1 FROM fwd f
                       JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = f.id
                       WHERE m.superseded_by IS NOT NULL AND f.depth < 1000
                   )
                   SELECT m.id, m.label, m.definition, m.state, m.provenance, m.base_trust, m.valid_from, m.valid_to,
                          m.recorded_at, m.superseded_at, m.superseded_by, m.ingest_seq
                   FROM memories m
                   WHERE m.tenant_id = %(tenant)s AND m.id IN (SELECT id FROM back UNION SELECT id FROM fwd)
                   ORDER BY m.valid_from, m.ingest_seq""",
                {"tenant": tenant_id, "id": memory_id},
            ).fetchall()
            events = conn.execute(
                """SELECT chain_seq, at, actor, action, memory_id, reason, details FROM audit_log
                   WHERE tenant_id = %s AND (memory_id = ANY(%s) OR details->>'by' = ANY(%s))
                   ORDER BY chain_seq""",
                [tenant_id, [v["id"] for v in versions], [str(v["id"]) for v in versions]],
            ).fetchall()
        return versions, events

    # -- the audit chain -------------------------------------------------------------------
    def audit_page(self, tenant_id: str, *, after: int, limit: int, memory_id: UUID | None = None) -> list[dict]:
        """Entries in chain order after ``after`` (keyset), with the columns the hash covers."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                """SELECT tenant_id, seq, chain_seq, id, at, actor, action, memory_id, reason, details,
                          details::text AS details_text, prev_hash, hash
                   FROM audit_log
                   WHERE tenant_id = %(tenant)s AND COALESCE(chain_seq, 0) > %(after)s
                     AND (%(memory)s::uuid IS NULL OR memory_id = %(memory)s::uuid)
                   ORDER BY chain_seq NULLS FIRST, seq
                   LIMIT %(limit)s""",
                {"tenant": tenant_id, "after": after, "limit": limit, "memory": memory_id},
            ).fetchall()

    def unchained(self, tenant_id: str) -> list[dict]:
        """Rows that carry no place in the chain (written around the trigger)."""
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                "SELECT seq, id FROM audit_log WHERE tenant_id = %s AND chain_seq IS NULL ORDER BY seq", [tenant_id]
            ).fetchall()

    def audit_head(self, tenant_id: str) -> dict | None:
        with self.db.tenant_tx(tenant_id) as conn:
            return conn.execute(
                "SELECT chain_seq, hash FROM audit_chain_heads WHERE tenant_id = %s", [tenant_id]
            ).fetchone()

    def audit_tenants(self) -> list[str]:
        """Every tenant (the tenants table has no row-level security)."""
        with self.db.system_tx() as conn:
            return [r["tenant_id"] for r in conn.execute("SELECT tenant_id FROM tenants ORDER BY tenant_id")]
