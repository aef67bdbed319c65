"""The writes of an admission (S4 step 7): memory upserts, vectors and their LSH bands, items and
related edges, each one set-based statement for the batch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings, MergeSettings
from contextos.decay import weibull_scale as decay_weibull_scale
from contextos.evidence import stem_key
from contextos.merge_plan import label_acronyms, label_initials
from contextos.models import MemoryCandidate
from contextos.sources import ConceptSource, DocumentSource, SessionSource
from contextos.store.bands import delete_bands, insert_bands, keys_literal
from contextos.store.batch import Writes
from contextos.store.db import Conn, Database
from contextos.store.sql import band_case, current_strength, next_transition, reinforced, weibull_scale
from pgvector import Vector


class AdmissionWrites:
    """The writes, on the admission store (``db``, ``decay``, ``merge``)."""

    db: Database
    decay: DecaySettings
    merge: MergeSettings

    def _policy_columns(self, tenant_id: str) -> dict[str, dict[str, Any]]:
        """The tenant's decay policy for new memories: SQL for ``next_transition`` and the column values."""
        d = self.decay
        return {
            "sql": {
                "policy_sql": "%(policy)s::text",
                "scale_sql": "%(scale)s::float8",
                "shape_sql": "%(shape)s::float8",
            },
            "params": {
                "policy": d.policy_for(tenant_id),
                "scale": decay_weibull_scale(0, d.weibull),
                "shape": d.weibull.shape,
            },
        }

    def _write_vectors(
        self,
        conn: Writes,
        tenant_id: str,
        memories: list[MemoryCandidate],
        rows: list[dict],
        embedder_id: str,
        lsh_sketches: dict[str, tuple[str, list[int], Vector]],
    ) -> None:
        """A vector (and its LSH bands) for each new memory, and new ones where a merge kept the
        newer definition. Vectors land in the fresh segment (indexed = false): no ANN insert here.
        ``lsh_sketches`` holds each memory's LSH signature, band keys and vector, by norm key."""
        by_key = {m.norm_key: m for m in memories}
        changed = [r for r in rows if r["inserted"] or r["definition"] == by_key[r["norm_key"]].definition]
        if not changed:
            return
        replaced = [r["id"] for r in changed if not r["inserted"]]
        delete_bands(conn, self.db.dialect, tenant_id, replaced)  # through the old keys, before the vector row changes
        for fresh in (True, False):  # a new memory's rows cannot exist yet: plain inserts (no upsert)
            part = [r for r in changed if bool(r["inserted"]) is fresh]
            if not part:
                continue
            upsert = (
                ""
                if fresh
                else """ ON CONFLICT (tenant_id, memory_id) DO UPDATE
                   SET embedding = EXCLUDED.embedding, embedder_id = EXCLUDED.embedder_id, indexed = false,
                       band_keys = EXCLUDED.band_keys, updated_at = now()"""
            )
            conn.execute(
                f"""INSERT INTO memory_vectors (tenant_id, memory_id, type, embedding, embedder_id, band_keys)
                   SELECT %s, i, t, e, %s, k::int[]
                   FROM unnest(%b::uuid[], %b::text[], %b::vector[], %b::text[]) AS v(i, t, e, k){upsert}""",
                [
                    tenant_id,
                    embedder_id,
                    [r["id"] for r in part],
                    [r["type"] for r in part],
                    [lsh_sketches[r["norm_key"]][2] for r in part],
                    [keys_literal(lsh_sketches[r["norm_key"]][1]) for r in part],
                ],
            )
            insert_bands(
                conn,
                tenant_id,
                [r["id"] for r in part],
                [lsh_sketches[r["norm_key"]][0] for r in part],
                [lsh_sketches[r["norm_key"]][1] for r in part],
                fresh=fresh,
            )

    def _upsert_memories(
        self, conn: Conn, tenant_id: str, memories: list[MemoryCandidate], texts: dict[str, str] | None = None
    ) -> list[dict]:
        """Insert new memories; a key match reinforces, keeps the better definition and bumps access.
        ``texts`` (by norm key) is what the sources said beyond the definition: it joins the memory's
        ``source_text`` (the searchable excerpts), each passage once, with the definition not kept."""
        d = self.decay
        strength = current_strength("m")
        merged_strength = reinforced(strength, d)
        merged_scale = weibull_scale("m.access_count + 1", d)
        policy = self._policy_columns(tenant_id)
        initial = float(d.initial_strength)
        better = (
            "(EXCLUDED.importance > m.importance OR (EXCLUDED.importance = m.importance"
            " AND length(EXCLUDED.definition) > length(m.definition)))"
        )
        unkept = f"CASE WHEN {better} THEN m.definition ELSE EXCLUDED.definition END"
        return conn.execute(
            f"""
            INSERT INTO memories AS m (tenant_id, norm_key, label, definition, type, importance,
                strength_anchor, strength_anchor_at, last_accessed_at, valid_from, decay_rate, strength, band,
                provenance, base_trust, next_transition_at, initials, acronyms, decay_policy, decay_scale,
                decay_shape, source_text)
            SELECT %(tenant)s, i.norm_key, i.label, i.definition, i.type, i.importance,
                   {initial}, COALESCE(i.said_at, now()), COALESCE(i.said_at, now()), COALESCE(i.said_at, now()),
                   i.decay_rate, {initial}, 'strong', i.provenance, i.base_trust,
                   {
                next_transition(
                    str(initial), "COALESCE(i.said_at, now())", "i.decay_rate", str(initial), d, **policy["sql"]
                )
            },
                   i.initials, COALESCE(string_to_array(NULLIF(i.acronyms, ''), ','), '{{}}'),
                   %(policy)s, %(scale)s, %(shape)s, left(i.source_text, {self.merge.source_text_chars})
            FROM unnest(%(keys)b::text[], %(labels)b::text[], %(defs)b::text[], %(types)b::text[],
                        %(imps)b::int[], %(rates)b::float8[], %(provs)b::text[],
                        %(trusts)b::float8[], %(inits)b::text[], %(acrs)b::text[], %(srcs)b::text[],
                        %(saids)s::timestamptz[])
                AS i(norm_key, label, definition, type, importance, decay_rate, provenance,
                     base_trust, initials, acronyms, source_text, said_at)
            ON CONFLICT (tenant_id, norm_key) WHERE state = 'active' DO UPDATE SET
                strength_anchor = {merged_strength},
                strength_anchor_at = now(),
                strength = {merged_strength},
                band = {band_case(merged_strength, d)},
                strength_materialized_at = now(),
                next_transition_at = {
                next_transition(merged_strength, "now()", "m.decay_rate", merged_strength, d, scale_sql=merged_scale)
            },
                decay_scale = {merged_scale},
                importance = GREATEST(m.importance, EXCLUDED.importance),
                definition = CASE WHEN {better} THEN EXCLUDED.definition ELSE m.definition END,
                source_text = left(m.source_text
                    || CASE WHEN m.definition = EXCLUDED.definition OR strpos(m.source_text, {unkept}) > 0
                            THEN '' ELSE E'\\n' || {unkept} END
                    || CASE WHEN EXCLUDED.source_text = '' OR strpos(m.source_text, EXCLUDED.source_text) > 0
                            THEN '' ELSE E'\\n' || EXCLUDED.source_text END, {self.merge.source_text_chars}),
                acronyms = ARRAY(SELECT DISTINCT unnest(m.acronyms || EXCLUDED.acronyms)),
                initials = COALESCE(m.initials, EXCLUDED.initials),
                access_count = m.access_count + 1,
                last_accessed_at = now(),
                version = m.version + 1,
                updated_at = now()
            RETURNING m.id, m.norm_key, m.definition, m.type, (m.created_at = now()) AS inserted
            """,
            {
                "tenant": tenant_id,
                "inits": [label_initials(c.label) for c in memories],
                "acrs": [",".join(label_acronyms(c.label)) for c in memories],
                "srcs": [(texts or {}).get(c.norm_key, "") for c in memories],
                # when each was said (a conversation's imported turn): decay and validity start there
                "saids": [c.said_at for c in memories],
                **policy["params"],
                **candidate_columns(memories),
            },
        ).fetchall()

    @staticmethod
    def _insert_items(
        conn: Writes,
        tenant_id: str,
        source: ConceptSource | None,
        candidates: Sequence[MemoryCandidate],
        final_keys: list[str],
        ids: dict[str, UUID],
    ) -> None:
        """One memory_item per occurrence, under the memory it ended in, pointing at its source
        (the document, or the session and message range)."""
        if not candidates:
            return
        document_id = source.document_id if isinstance(source, DocumentSource) else None
        session = (
            (source.session_id, source.message_from, source.message_to)
            if isinstance(source, SessionSource)
            else (None, None, None)
        )
        conn.execute(
            """INSERT INTO memory_items (tenant_id, memory_id, document_id, session_id, message_from, message_to,
                                         label, definition, importance, excerpts, excerpt_stems, definition_stems)
               SELECT %s, m, %s, %s, %s, %s, l, d, i, ARRAY(SELECT jsonb_array_elements_text(e::jsonb)),
                      ARRAY(SELECT jsonb_array_elements_text(es::jsonb)), ds
               FROM unnest(%b::uuid[], %b::text[], %b::text[], %b::int[], %b::text[], %b::text[], %b::text[])
                    AS t(m, l, d, i, e, es, ds)""",
            [
                tenant_id,
                document_id,
                *session,
                [ids[k] for k in final_keys],
                [c.label for c in candidates],
                [c.definition for c in candidates],
                [c.importance for c in candidates],
                [json.dumps(c.excerpts) for c in candidates],
                # the L2 matcher's stemmed forms, computed once here (migration 0031)
                [json.dumps([stem_key(e) for e in c.excerpts]) for c in candidates],
                [stem_key(c.definition) for c in candidates],
            ],
        )

    def _upsert_related_edges(
        self, conn: Writes, tenant_id: str, pairs: list[tuple[UUID, UUID]], new_ids: set[UUID] | frozenset = frozenset()
    ) -> None:
        """``related`` edges; a repeated one gains weight. An edge touching a memory created in this
        transaction (``new_ids``) cannot exist yet: a plain insert, without the upsert's cost."""
        cfg = self.merge
        fresh = [p for p in pairs if p[0] in new_ids or p[1] in new_ids]
        known = [p for p in pairs if not (p[0] in new_ids or p[1] in new_ids)]
        upsert = f""" ON CONFLICT (tenant_id, src_id, dst_id, type) DO UPDATE
               SET weight = LEAST(1.0, relationships.weight + {cfg.related_edge_step}), updated_at = now()"""
        for part, conflict in ((fresh, ""), (known, upsert)):
            if part:
                conn.execute(
                    f"""INSERT INTO relationships (tenant_id, src_id, dst_id, type, weight)
                       SELECT %s, s, d, 'related', {cfg.related_edge_weight}
                       FROM unnest(%b::uuid[], %b::uuid[]) AS p(s, d){conflict}""",
                    [tenant_id, [p[0] for p in part], [p[1] for p in part]],
                )


def candidate_columns(candidates: Sequence[MemoryCandidate]) -> dict[str, list]:
    """The candidates as parallel arrays, for ``unnest`` inserts."""
    return {
        "keys": [c.norm_key for c in candidates],
        "labels": [c.label for c in candidates],
        "defs": [c.definition for c in candidates],
        "types": [c.type for c in candidates],
        "imps": [c.importance for c in candidates],
        "rates": [c.decay_rate for c in candidates],
        "provs": [c.provenance.value for c in candidates],
        "trusts": [c.base_trust for c in candidates],
    }


def admission_audit(rows: Sequence[dict[str, Any]], actor: str, source: ConceptSource | None) -> list[dict[str, Any]]:
    """One audit row per memory an admission created or merged into, naming its source."""
    details: dict[str, Any]
    match source:
        case DocumentSource():
            details = {"document_id": str(source.document_id)}
        case SessionSource():
            details = {"session_id": source.session_id, "messages": [source.message_from, source.message_to]}
        case _:
            details = {}
    return [
        {"actor": actor, "action": "admitted" if r["inserted"] else "merged", "memory_id": r["id"], "details": details}
        for r in rows
    ]
