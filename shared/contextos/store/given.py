"""A workspace batch through admission (S10): edits by id, then memories as their files give them.

The same transaction and the same gates as every admission (``contextos.store.admission``): the
tenant lock, the review queue for what the trust gate (or the firewall) held, the contradiction
gate for the new live memories, the one memory writer and its vectors, subject terms and audit
rows. What a file adds is that it names its memory: an id already taken, or an active key already
held, refuses that file alone (a file never merges into another memory), and its own occurrences
and edges come with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import numpy as np
from contextos.errors import NotFound
from contextos.lsh import sketch
from contextos.normalization import acronyms, initials
from contextos.ports.admission import FileOutcome, GivenEdit, GivenMemory, GivenSource
from contextos.store.admission_writes import NewVector
from contextos.store.audit import write_audit
from contextos.store.db import Conn
from contextos.store.memory_changes import MemoryChanges
from pgvector import Vector

IMPORT_REASON = "imported from a workspace file"


def apply_edit(changes: MemoryChanges, edit: GivenEdit, *, embedder_id: str, actor: str) -> FileOutcome:
    """An edit applies only over the version it was made on (read before the lock), and a
    relabelled active memory only to a key no other active memory holds."""
    try:
        row = changes.lock(edit.memory_id)
    except NotFound:
        return FileOutcome("conflict", edit.memory_id)
    if row["version"] != edit.version:
        return FileOutcome("conflict", edit.memory_id)
    if edit.key_must_be_free and row["state"] == "active":
        holder = changes.active_keys([edit.norm_key], besides=edit.memory_id).get(edit.norm_key)
        if holder is not None:
            return FileOutcome("duplicate_key", edit.memory_id, holder=holder)
    version = changes.apply_edit(
        row,
        edit.changes,
        norm_key=edit.norm_key,
        initials=initials(edit.label),
        acronyms=acronyms(edit.label),
        embedding=edit.embedding,
        embedder_id=embedder_id,
        actor=actor,
        reason="workspace edit",
    )
    return FileOutcome("updated", edit.memory_id, version=version)


def refusals(conn: Conn, changes: MemoryChanges, memories: Sequence[GivenMemory]) -> dict[UUID, FileOutcome]:
    """The given memories that cannot be created, under the lock: an id the tenant holds already, or
    an active key held (by a stored memory, or by an earlier file of the batch)."""
    taken = {
        r["id"]
        for r in conn.execute(
            "SELECT id FROM memories WHERE tenant_id = %s AND id = ANY(%s) ORDER BY id FOR UPDATE",
            [changes.tenant_id, [g.id for g in memories]],
        ).fetchall()
    }
    active = [g for g in memories if g.state == "active" and g.id not in taken]
    holders = changes.active_keys(sorted({g.candidate.norm_key for g in active}))
    refused = {i: FileOutcome("conflict", i) for i in taken}
    mine: set[str] = set()
    for g in active:
        key = g.candidate.norm_key
        if key in holders or key in mine:
            refused[g.id] = FileOutcome("duplicate_key", g.id, holder=holders.get(key))
        else:
            mine.add(key)
    return refused


def given_vectors(memories: Sequence[GivenMemory]) -> tuple[list[NewVector], list[list[int]]]:
    """Each memory's vector with its LSH sketch (searchable only while live), and the band keys."""
    matrix = np.asarray([g.candidate.embedding for g in memories], dtype=np.float32)
    lsh = sketch(matrix)
    vectors = [
        NewVector(
            g.id,
            g.candidate.type,
            Vector(matrix[i]),
            lsh.signatures[i],
            lsh.band_keys[i],
            inserted=True,
            searchable=g.live,
            cold=g.tier == "cold",
        )
        for i, g in enumerate(memories)
    ]
    return vectors, lsh.band_keys


def insert_sources(conn: Conn, tenant_id: str, memories: Sequence[GivenMemory], document_id: UUID | None) -> None:
    """Each memory's occurrences as its file names them (a file naming none, dropped into the upload
    bucket, has its document); a document the tenant lacks is recreated as a record-only stub."""
    items = [
        (g.id, s)
        for g in memories
        for s in g.sources
        or (
            [_dropped_file(g, document_id)]  # a dropped file is its memory's source
            if document_id is not None
            else []
        )
    ]
    if not items:
        return
    documents = {(s.document_id, s.filename) for _, s in items if s.document_id is not None}
    if documents:
        conn.execute(
            """INSERT INTO documents (tenant_id, id, content_hash, filename, status, source_type, metadata)
               SELECT %s, d, 'workspace:' || d::text, f, 'done', 'workspace', '{"stub": true}'::jsonb
               FROM unnest(%s::uuid[], %s::text[]) AS t(d, f)
               ON CONFLICT DO NOTHING""",
            [tenant_id, [d for d, _ in documents], [f for _, f in documents]],
        )
    conn.execute(
        """INSERT INTO memory_items (tenant_id, memory_id, document_id, session_id, message_from, message_to,
                                     label, definition, importance, created_at)
           SELECT %s, m, d, s, f, t, l, x, i, COALESCE(c, now())
           FROM unnest(%s::uuid[], %s::uuid[], %s::text[], %s::int[], %s::int[], %s::text[], %s::text[],
                       %s::int[], %s::timestamptz[]) AS u(m, d, s, f, t, l, x, i, c)""",
        [
            tenant_id,
            [m for m, _ in items],
            [s.document_id for _, s in items],
            [s.session_id for _, s in items],
            [s.message_from for _, s in items],
            [s.message_to for _, s in items],
            [s.label for _, s in items],
            [s.definition for _, s in items],
            [s.importance for _, s in items],
            [s.created_at for _, s in items],
        ],
    )


def _dropped_file(g: GivenMemory, document_id: UUID) -> GivenSource:
    c = g.candidate
    return GivenSource(document_id, None, None, None, None, c.label, c.definition, c.importance, None)


def insert_edges(conn: Conn, tenant_id: str, memories: Sequence[GivenMemory]) -> int:
    """The edges the files name, between memories of this tenant (one whose end is missing is left
    out); how many."""
    edges = [(g.id, to, kind, weight) for g in memories for to, kind, weight in g.edges]
    if not edges:
        return 0
    rows = conn.execute(
        """INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
           SELECT %(tenant)s, e.s, e.d, e.t, e.w
           FROM unnest(%(src)s::uuid[], %(dst)s::uuid[], %(types)s::text[], %(weights)s::float8[]) AS e(s, d, t, w)
           WHERE e.s <> e.d
             AND EXISTS (SELECT 1 FROM memories x WHERE x.tenant_id = %(tenant)s AND x.id = e.s)
             AND EXISTS (SELECT 1 FROM memories y WHERE y.tenant_id = %(tenant)s AND y.id = e.d)
           ON CONFLICT (tenant_id, src_id, dst_id, type) DO UPDATE SET weight = EXCLUDED.weight
           RETURNING 1""",
        {
            "tenant": tenant_id,
            "src": [e[0] for e in edges],
            "dst": [e[1] for e in edges],
            "types": [e[2] for e in edges],
            "weights": [e[3] for e in edges],
        },
    ).fetchall()
    return len(rows)


def record_admitted(conn: Conn, tenant_id: str, memories: Sequence[GivenMemory], *, actor: str) -> None:
    """The tenant's hot count, and one ``admitted`` audit row per memory."""
    live = sum(1 for g in memories if g.live)
    if live:
        conn.execute("UPDATE tenants SET hot_memories = hot_memories + %s WHERE tenant_id = %s", [live, tenant_id])
    write_audit(
        conn,
        tenant_id,
        [
            {
                "actor": actor,
                "action": "admitted",
                "memory_id": g.id,
                "reason": IMPORT_REASON,
                "details": {"via": "workspace"},
            }
            for g in memories
        ],
    )
