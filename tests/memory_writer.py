"""A second writer of memories, for tests and benchmarks only: each candidate stored as its own
memory, as given, past the merges and the governance gates (backdated corpora, one memory per
conversation turn). Production admits through ``contextos.store.admission`` alone."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from uuid import UUID

from contextos.lsh import sketch
from contextos.models import MemoryCandidate
from contextos.store.admission_writes import admitted_vectors, candidate_columns
from contextos.store.governance import insert_subject_terms
from contextos.store.locks import lock_tenant
from contextos.store.session_neighbours import link_session_neighbours
from contextos.store.sql import next_transition
from contextos.store.stores import Stores
from pgvector import Vector


def add_memories(
    stores: Stores,
    tenant_id: str,
    candidates: Sequence[MemoryCandidate],
    *,
    embedder_id: str,
    at: Sequence[datetime] | None = None,
    session_id: str | None = None,
    message_seqs: Sequence[int] | None = None,
    ids: Sequence[UUID] | None = None,
) -> list[UUID]:
    """Store each candidate as its own memory, as given: no merging (manual memories, imports,
    one memory per conversation turn). ``at`` backdates each one (when it was said or learned);
    ``session_id``/``message_seqs`` record where each came from; ``ids`` fixes the new memories' ids
    (a benchmark that compares rankings across runs: equal scores are ordered by id). Returns the
    new ids in order."""
    if not candidates:
        return []
    store = stores.admission
    d = store.decay
    times = list(at) if at is not None else [None] * len(candidates)
    given_ids = list(ids) if ids is not None else [None] * len(candidates)
    seqs = list(message_seqs) if message_seqs is not None else [None] * len(candidates)
    policy = store._policy_columns(tenant_id)
    with store.db.tenant_tx(tenant_id) as conn:
        lock_tenant(conn, tenant_id)
        rows = conn.execute(
            f"""INSERT INTO memories AS m (tenant_id, id, norm_key, label, definition, type, importance,
                    strength_anchor, strength_anchor_at, decay_rate, provenance, base_trust, initials, acronyms,
                    last_accessed_at, valid_from, recorded_at, created_at, updated_at, next_transition_at,
                    decay_policy, decay_scale, decay_shape)
                SELECT %(tenant)s, COALESCE(i.id, gen_random_uuid()), i.norm_key, i.label, i.definition, i.type,
                       i.importance,
                       {float(d.initial_strength)}, COALESCE(i.at, now()), i.decay_rate, i.provenance,
                       i.base_trust, NULL, '{{}}', COALESCE(i.at, now()), COALESCE(i.at, now()),
                       COALESCE(i.at, now()), COALESCE(i.at, now()), COALESCE(i.at, now()),
                       {
                next_transition(
                    str(float(d.initial_strength)),
                    "COALESCE(i.at, now())",
                    "i.decay_rate",
                    str(float(d.initial_strength)),
                    d,
                    **policy["sql"],
                )
            },
                       %(policy)s, %(scale)s, %(shape)s
                FROM unnest(%(keys)b::text[], %(labels)b::text[], %(defs)b::text[], %(types)b::text[],
                            %(imps)b::int[], %(rates)b::float8[], %(provs)b::text[], %(trusts)b::float8[],
                            %(ats)s::timestamptz[], %(ids)s::uuid[])
                    AS i(norm_key, label, definition, type, importance, decay_rate, provenance, base_trust, at, id)
                RETURNING m.id""",
            {"tenant": tenant_id, "ats": times, "ids": given_ids, **policy["params"], **candidate_columns(candidates)},
        ).fetchall()
        ids = [r["id"] for r in rows]
        memory_rows = [
            {"id": i, "norm_key": c.norm_key, "definition": c.definition, "type": c.type, "inserted": True}
            for i, c in zip(ids, candidates, strict=True)
        ]
        lsh = sketch([c.embedding for c in candidates])
        with conn.pipeline():
            store.write_vectors(
                conn,
                tenant_id,
                admitted_vectors(
                    list(candidates),
                    memory_rows,
                    {
                        c.norm_key: (lsh.signatures[i], lsh.band_keys[i], Vector(c.embedding))
                        for i, c in enumerate(candidates)
                    },
                ),
                embedder_id,
            )
            conn.execute(
                """INSERT INTO memory_items (tenant_id, memory_id, session_id, message_from, message_to, label,
                                             definition, importance)
                   SELECT %s, m, %s, s, s, l, d, i
                   FROM unnest(%b::uuid[], %b::int[], %b::text[], %b::text[], %b::int[]) AS t(m, s, l, d, i)""",
                [
                    tenant_id,
                    session_id,
                    ids,
                    seqs,
                    [c.label for c in candidates],
                    [c.definition for c in candidates],
                    [c.importance for c in candidates],
                ],
            )
            conn.execute(
                "UPDATE tenants SET hot_memories = hot_memories + %s WHERE tenant_id = %s", [len(ids), tenant_id]
            )
            if store.db.dialect.keeps_subject_terms():
                insert_subject_terms(conn, tenant_id, ids, [c.norm_key for c in candidates])
            if session_id is not None:
                link_session_neighbours(conn, tenant_id, session_id, ids, seqs, store.merge.session_neighbour_weight)
    return ids


def new_document(stores: Stores, tenant_id: str) -> UUID:
    """A document record for memories to come from (its text never stored: only its id is used)."""
    record, _ = stores.documents.create_document(
        tenant_id,
        content_hash=uuid.uuid4().hex,
        filename=None,
        content_type=None,
        provenance="user_upload",
        size_bytes=1,
    )
    return record.id
