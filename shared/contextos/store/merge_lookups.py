"""The merge lookups of an admission (S4 step 7): the tenant lock, then the exact-key, acronym and
near-duplicate probes in one round trip. What the rows mean is decided in ``contextos.merge_plan``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from contextos.config import MergeSettings
from contextos.lsh import PREFIX_BITS, Sketch, max_hamming, signature_prefix
from contextos.merge_plan import (
    LookupRow,
    MergePlan,
    NearRow,
    label_acronyms,
    label_initials,
    merge_targets,
    nearest_by_candidate,
    order_lookup_rows,
)
from contextos.models import MemoryCandidate
from contextos.scopes import key_owner
from contextos.store.bands import band_params, flat_keys, keys_literal
from contextos.store.db import Conn, Database, one
from contextos.store.locks import LOCK_TENANT_SQL, lock_tenant
from contextos.store.scopes import key_owner_sql
from pgvector import Vector

# what an acronym row says of itself, read for the evidence that it names what a candidate does
_EVIDENCE = "label, left(definition, 4000)"


class MergeLookups:
    """The lookups, on the admission store (``db``, ``merge``)."""

    db: Database
    merge: MergeSettings

    def _lock_and_find_merge_targets(
        self, conn: Conn, tenant_id: str, candidates: Sequence[MemoryCandidate], lsh: Sketch, vectors: list[Vector]
    ) -> tuple[int, MergePlan]:
        """The tenant lock, then every merge lookup, in one round trip (a pipeline: the server runs
        them in order, so the lookups run under the lock). Returns the tenant's hot count and the
        merge plan: per candidate index, the existing memory it joins and why (``merge_targets``).

        The near-duplicate probe is sent for every candidate at once rather than after the exact and
        acronym lookups; its answers count only for candidates those lookups left unmatched."""
        if not candidates:
            return lock_tenant(conn, tenant_id), MergePlan(candidates)
        lookup_sql, lookup_params = self._merge_lookup_query(tenant_id, candidates)
        near_ctes, near_params = self._near_duplicate_ctes(tenant_id, candidates, lsh, vectors)
        with conn.pipeline():
            lock = conn.execute(LOCK_TENANT_SQL, [tenant_id])
            # A statement of its own after the lock's, so its snapshot sees what committed meanwhile.
            found = conn.execute(
                f"""WITH {near_ctes},
                   lookups AS ({lookup_sql})
                   SELECT false AS near, l.exact, l.norm_key, l.initials, l.acronyms, l.importance, l.created_at,
                          l.ingest_seq, l.type, l.label, l.definition, NULL::int AS idx, NULL::float8 AS similarity
                   FROM lookups l
                   UNION ALL
                   SELECT true, NULL, n.norm_key, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, n.idx, n.similarity
                   FROM near n""",
                lookup_params | near_params,
            )
            hot = int(one(lock.fetchone())["hot_memories"])
            rows = found.fetchall()
        lookup_rows = order_lookup_rows([cast(LookupRow, r) for r in rows if not r["near"]])
        near_rows = [cast(NearRow, r) for r in rows if r["near"]]
        if not hot:
            return hot, MergePlan(candidates)
        return hot, merge_targets(candidates, lookup_rows, nearest_by_candidate(candidates, near_rows))

    @staticmethod
    def _merge_lookup_query(tenant_id: str, candidates: Sequence[MemoryCandidate]) -> tuple[str, dict[str, Any]]:
        """Exact keys, then acronym pairs such as "GRPO" ↔ "Group Relative Policy Optimization", both
        through btree indexes in one query."""
        return (
            f"""SELECT true AS exact, norm_key, NULL::text AS initials, NULL::text[] AS acronyms, 0 AS importance,
                      NULL::timestamptz AS created_at, NULL::int8 AS ingest_seq, NULL::text AS type,
                      NULL::text AS label, NULL::text AS definition
               FROM memories WHERE tenant_id = %(tenant)s AND state = 'active' AND norm_key = ANY(%(keys)b::text[])
               UNION ALL
               SELECT false, norm_key, initials, acronyms, importance, created_at, ingest_seq, type, {_EVIDENCE}
               FROM memories
               WHERE tenant_id = %(tenant)s AND state = 'active' AND initials = ANY(%(acronyms)b::text[])
               UNION ALL
               SELECT false, norm_key, initials, acronyms, importance, created_at, ingest_seq, type, {_EVIDENCE}
               FROM memories
               WHERE tenant_id = %(tenant)s AND state = 'active' AND cardinality(acronyms) > 0
                 AND acronyms[1] = ANY(%(initials)b::text[])""",
            {
                "tenant": tenant_id,
                "keys": [c.norm_key for c in candidates],
                "initials": sorted({v for v in (label_initials(c.label) for c in candidates) if v}),
                "acronyms": sorted({a for c in candidates for a in label_acronyms(c.label)}),
            },
        )

    def _near_duplicate_query(
        self, tenant_id: str, candidates: Sequence[MemoryCandidate], lsh: Sketch, vectors: Sequence[Vector]
    ) -> tuple[str, dict[str, Any]]:
        """The near-duplicate probe as a statement of its own (see ``_near_duplicate_ctes``)."""
        ctes, params = self._near_duplicate_ctes(tenant_id, candidates, lsh, vectors)
        return f"WITH {ctes} SELECT idx, norm_key, similarity FROM near", params

    def _near_duplicate_ctes(
        self, tenant_id: str, candidates: Sequence[MemoryCandidate], lsh: Sketch, vectors: Sequence[Vector]
    ) -> tuple[str, dict[str, Any]]:
        """CTEs ending in ``near``: (candidate index, key, similarity) rows, the memories of the same
        type close enough to each candidate (``_nearest_by_candidate`` keeps the nearest). ``lsh``
        and ``vectors`` are the candidates' sketch and embeddings, in order.

        Candidates come from shared LSH bands (tenant-scoped btree lookups, see contextos.lsh) whose
        signatures are within the threshold's Hamming distance, read from the index itself; each
        survivor is then checked with the exact cosine. No ANN probe, so the cost does not grow
        with the index, and small tenants beside large ones lose nothing. The band keys come
        computed (``contextos.lsh.sketch``), one (candidate, key) pair per band.

        The lookups are LATERAL subqueries fenced with OFFSET 0, so each is an index probe whatever
        the statistics say: a tenant that grew since the last ANALYZE looks empty to the planner,
        which then prefers to read all its band rows into a hash join (cost growing with the tenant).
        """
        signature_close = self.db.dialect.signature_filter_sql("b", "p.prefix", "%(max_distance)s")
        return (
            f"""probe AS MATERIALIZED (
                   SELECT t.idx, t.type, t.embedding, t.prefix, t.owner
                   FROM unnest(%(idx)b::int[], %(types)b::text[], %(embs)b::vector[], %(prefixes)b::int8[],
                               %(owners)s::text[])
                       AS t(idx, type, embedding, prefix, owner)
               ),
               hits AS MATERIALIZED (
                   SELECT DISTINCT p.idx, b.memory_id
                   FROM unnest(%(band_idx)s::int[], %(band_keys)s::int[]) AS pb(idx, band_key)
                   JOIN probe p ON p.idx = pb.idx
                   CROSS JOIN LATERAL (
                       SELECT b.memory_id, b.signature64 FROM memory_vector_bands b
                       WHERE {self.db.dialect.band_match_sql("b", "pb.band_key")} OFFSET 0
                   ) AS b
                   WHERE {signature_close}
               ),
               near AS (
               SELECT h.idx, v.norm_key, 1.0 - (v.embedding <=> p.embedding) AS similarity
               FROM hits h
               JOIN probe p ON p.idx = h.idx
               CROSS JOIN LATERAL (
                   SELECT m.norm_key, v.embedding
                   FROM memory_vectors v
                   JOIN memories m ON m.tenant_id = %(tenant)s AND m.id = v.memory_id AND m.state = 'active'
                    AND {key_owner_sql("m.norm_key")} IS NOT DISTINCT FROM p.owner
                   WHERE v.tenant_id = %(tenant)s AND v.memory_id = h.memory_id AND v.searchable AND v.type = p.type
                   OFFSET 0
               ) AS v
               WHERE 1.0 - (v.embedding <=> p.embedding) >= %(threshold)s)""",
            band_params(tenant_id)
            | {
                "idx": list(range(len(candidates))),
                "types": [c.type for c in candidates],
                "embs": list(vectors),
                "owners": [key_owner(c.norm_key) for c in candidates],  # S11: merges stay within one owner
                "prefixes": [signature_prefix(s) for s in lsh.signatures],
                "band_idx": keys_literal([i for i, keys in enumerate(lsh.band_keys) for _ in keys]),
                "band_keys": keys_literal(flat_keys(lsh.band_keys)),
                "threshold": self.merge.near_duplicate_cosine,
                "max_distance": max_hamming(self.merge.near_duplicate_cosine, bits=PREFIX_BITS),
            },
        )
