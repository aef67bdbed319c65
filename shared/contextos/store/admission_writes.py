"""The writes of an admission (S4 step 7): memory upserts, vectors and their LSH bands, items and
related edges, each one set-based statement for the batch."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings, MergeSettings
from contextos.decay import weibull_scale as decay_weibull_scale
from contextos.evidence import stem_key
from contextos.merge_plan import label_acronyms, label_initials
from contextos.models import MemoryCandidate
from contextos.ports.admission import GivenMemory
from contextos.sources import ConceptSource, DocumentSource, SessionSource
from contextos.store.bands import delete_bands, insert_bands, keys_literal
from contextos.store.batch import Writes
from contextos.store.db import Conn, Database
from contextos.store.sql import band_case, current_strength, next_transition, reinforced, strength_since, weibull_scale
from pgvector import Vector


@dataclass(frozen=True)
class NewVector:
    """A memory's vector to write: new (``inserted``) or replacing the one a merge outdated."""

    memory_id: UUID
    type: str
    vector: Vector
    signature: str
    band_keys: list[int]
    inserted: bool
    searchable: bool = True  # active and hot
    cold: bool = False


def admitted_vectors(
    memories: Sequence[MemoryCandidate],
    rows: Sequence[dict],
    sketches: dict[str, tuple[str, list[int], Vector]],
) -> list[NewVector]:
    """The vectors an admission writes: each new memory's, and the merged ones that kept the newer
    definition. ``sketches`` holds each memory's LSH signature, band keys and vector, by norm key."""
    by_key = {m.norm_key: m for m in memories}
    return [
        NewVector(r["id"], r["type"], sketches[r["norm_key"]][2], *sketches[r["norm_key"]][:2], bool(r["inserted"]))
        for r in rows
        if r["inserted"] or r["definition"] == by_key[r["norm_key"]].definition
    ]


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

    def write_vectors(self, conn: Writes, tenant_id: str, vectors: Sequence[NewVector], embedder_id: str) -> None:
        """The vectors (and LSH bands) of new memories, and new ones where a merge kept the newer
        definition. They land in the fresh segment (indexed = false): no ANN insert here."""
        if not vectors:
            return
        replaced = [v.memory_id for v in vectors if not v.inserted]
        delete_bands(conn, self.db.dialect, tenant_id, replaced)  # through the old keys, before the vector row changes
        for fresh in (True, False):  # a new memory's rows cannot exist yet: plain inserts (no upsert)
            part = [v for v in vectors if v.inserted is fresh]
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
                f"""INSERT INTO memory_vectors (tenant_id, memory_id, type, embedding, embedder_id, band_keys,
                                               searchable, cold)
                   SELECT %s, i, t, e, %s, k::int[], s, c
                   FROM unnest(%b::uuid[], %b::text[], %b::vector[], %b::text[], %b::bool[], %b::bool[])
                       AS v(i, t, e, k, s, c){upsert}""",
                [
                    tenant_id,
                    embedder_id,
                    [v.memory_id for v in part],
                    [v.type for v in part],
                    [v.vector for v in part],
                    [keys_literal(v.band_keys) for v in part],
                    [v.searchable for v in part],
                    [v.cold for v in part],
                ],
            )
            insert_bands(
                conn,
                tenant_id,
                [v.memory_id for v in part],
                [v.signature for v in part],
                [v.band_keys for v in part],
                fresh=fresh,
            )

    def _upsert_memories(
        self, conn: Conn, tenant_id: str, memories: list[MemoryCandidate], texts: dict[str, str] | None = None
    ) -> list[dict]:
        """Insert new memories; a key match reinforces, keeps the better definition and bumps access.
        ``texts`` (by norm key) is what the sources said beyond the definition: it joins the memory's
        ``source_text`` (the searchable excerpts), each passage once, with the definition not kept."""
        return conn.execute(
            self._memory_statement(),
            {
                "tenant": tenant_id,
                "srcs": [(texts or {}).get(c.norm_key, "") for c in memories],
                # when each was said (a conversation's imported turn): decay and validity start there
                "saids": [c.said_at for c in memories],
                **self._policy_columns(tenant_id)["params"],
                **candidate_columns(memories),
                **label_columns(memories),
                **dict.fromkeys(GIVEN_COLUMNS),
            },
        ).fetchall()

    def _insert_given(self, conn: Conn, tenant_id: str, given: Sequence[GivenMemory]) -> list[dict]:
        """Insert memories as given (a workspace file's): their ids, state, strength anchors, decay
        policy and history as they are; what they leave out, as a new memory has it. The caller has
        checked their ids and active keys are free under the tenant lock, so each is inserted (none
        meets the statement's merge), and each is returned ``inserted``."""
        rows = conn.execute(
            self._memory_statement(),
            {
                "tenant": tenant_id,
                "srcs": None,
                "saids": None,
                "policy": None,
                "scale": None,
                "shape": None,
                **candidate_columns([g.candidate for g in given]),
                **label_columns([g.candidate for g in given]),
                **given_columns(given),
            },
        ).fetchall()
        return [r | {"inserted": True} for r in rows]

    def _memory_statement(self) -> str:
        """The one statement that writes new memories: candidates (merged into the active memory that
        holds their key) and given memories, whose columns a candidate leaves NULL (``unnest`` pads
        an absent array with NULLs). A candidate's decay policy is the tenant's (the statement's
        ``policy``, ``scale`` and ``shape``); a given memory carries its own."""
        d = self.decay
        initial = float(d.initial_strength)
        anchor = f"COALESCE(i.strength_anchor, {initial})"
        anchor_at = "COALESCE(i.strength_anchor_at, i.said_at, now())"
        policy = "COALESCE(i.decay_policy, %(policy)s::text)"
        scale, shape = "COALESCE(i.decay_scale, %(scale)s::float8)", "COALESCE(i.decay_shape, %(shape)s::float8)"
        # materialized as of the given anchor; a candidate's (said now, or at a turn's own time) is new
        strength = strength_since(
            anchor,
            "COALESCE(i.strength_anchor_at, now())",
            "i.decay_rate",
            policy_sql=policy,
            scale_sql=scale,
            shape_sql=shape,
        )
        due = next_transition(
            anchor, anchor_at, "i.decay_rate", strength, d, policy_sql=policy, scale_sql=scale, shape_sql=shape
        )
        return f"""
            INSERT INTO memories AS m (tenant_id, id, norm_key, label, definition, type, importance, tags, metadata,
                user_id, agent_id, run_id, always_load, protected, version, created_at, updated_at,
                strength_anchor, strength_anchor_at, decay_policy, decay_rate, decay_scale, decay_shape, strength, band,
                next_transition_at, last_accessed_at, access_count, provenance, base_trust, state, tier,
                superseded_by, superseded_at, valid_from, valid_to, recorded_at, expires_at, cold_object_key,
                cold_byte_start, cold_byte_end, initials, acronyms, source_text)
            SELECT %(tenant)s, COALESCE(i.id, gen_random_uuid()), i.norm_key, i.label, i.definition, i.type,
                   i.importance, ARRAY(SELECT jsonb_array_elements_text(i.tags::jsonb)),
                   COALESCE(i.metadata::jsonb, '{{}}'), i.user_id, i.agent_id, i.run_id,
                   COALESCE(i.always_load, false), COALESCE(i.protected, false),
                   COALESCE(i.version, 1), COALESCE(i.created_at, now()), COALESCE(i.updated_at, i.created_at, now()),
                   {anchor}, {anchor_at}, {policy}, i.decay_rate, {scale}, {shape}, {strength},
                   {band_case(strength, d, policy)},
                   CASE WHEN COALESCE(i.state, 'active') = 'active' AND COALESCE(i.tier, 'hot') = 'hot'
                        -- born critical (said long ago): due now, so the next scan opens its reminder
                        THEN CASE WHEN {band_case(strength, d, policy)} = 'critical' THEN now() ELSE {due} END END,
                   COALESCE(i.last_accessed_at, i.said_at, now()), COALESCE(i.access_count, 0), i.provenance,
                   i.base_trust, COALESCE(i.state, 'active'), COALESCE(i.tier, 'hot'), i.superseded_by,
                   i.superseded_at, COALESCE(i.valid_from, i.said_at, i.created_at, now()), i.valid_to,
                   COALESCE(i.recorded_at, i.created_at, now()), i.expires_at, i.cold_object_key, i.cold_byte_start,
                   i.cold_byte_end, i.initials, COALESCE(string_to_array(NULLIF(i.acronyms, ''), ','), '{{}}'),
                   left(COALESCE(i.source_text, ''), {self.merge.source_text_chars})
            FROM unnest(%(keys)b::text[], %(labels)b::text[], %(defs)b::text[], %(types)b::text[],
                        %(imps)b::int[], %(rates)b::float8[], %(provs)b::text[],
                        %(trusts)b::float8[], %(inits)b::text[], %(acrs)b::text[], %(srcs)b::text[],
                        %(saids)s::timestamptz[], {GIVEN_ARRAYS})
                AS i(norm_key, label, definition, type, importance, decay_rate, provenance,
                     base_trust, initials, acronyms, source_text, said_at, {", ".join(GIVEN_COLUMNS)})
            ON CONFLICT (tenant_id, norm_key) WHERE state = 'active' DO UPDATE SET
                {self._merge_sets()}
            RETURNING m.id, m.norm_key, m.definition, m.type, (m.created_at = now()) AS inserted
            """

    def _merge_sets(self) -> str:
        """A candidate whose key an active memory holds merges into it: reinforced, the better
        definition kept, the other's text joined to what is searchable, access counted."""
        d = self.decay
        strength = current_strength("m")
        merged_strength = reinforced(strength, d)
        merged_scale = weibull_scale("m.access_count + 1", d)
        better = (
            "(EXCLUDED.importance > m.importance OR (EXCLUDED.importance = m.importance"
            " AND length(EXCLUDED.definition) > length(m.definition)))"
        )
        unkept = f"CASE WHEN {better} THEN m.definition ELSE EXCLUDED.definition END"
        return f"""strength_anchor = {merged_strength},
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
                updated_at = now()"""

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


def label_columns(candidates: Sequence[MemoryCandidate]) -> dict[str, list]:
    """What a memory is also found by, from its label: its initials and acronyms (comma-joined)."""
    return {
        "inits": [label_initials(c.label) for c in candidates],
        "acrs": [",".join(label_acronyms(c.label)) for c in candidates],
    }


# What a given memory (a workspace file's) carries beyond a candidate: the statement's columns, and
# the arrays they come from (NULL, padded to the candidates' length, for a candidate).
GIVEN_TYPES = {
    "id": "uuid",
    "tags": "text",  # a JSON array (tags differ in number per memory)
    "metadata": "text",  # a JSON object
    "user_id": "text",
    "agent_id": "text",
    "run_id": "text",
    "always_load": "bool",
    "protected": "bool",
    "version": "int",
    "created_at": "timestamptz",
    "updated_at": "timestamptz",
    "strength_anchor": "float8",
    "strength_anchor_at": "timestamptz",
    "decay_policy": "text",
    "decay_scale": "float8",
    "decay_shape": "float8",
    "last_accessed_at": "timestamptz",
    "access_count": "int",
    "state": "text",
    "tier": "text",
    "superseded_by": "uuid",
    "superseded_at": "timestamptz",
    "valid_from": "timestamptz",
    "valid_to": "timestamptz",
    "recorded_at": "timestamptz",
    "expires_at": "timestamptz",
    "cold_object_key": "text",
    "cold_byte_start": "int8",
    "cold_byte_end": "int8",
}
GIVEN_COLUMNS = tuple(GIVEN_TYPES)
GIVEN_ARRAYS = ", ".join(f"%({c})s::{t}[]" for c, t in GIVEN_TYPES.items())


def given_columns(given: Sequence[GivenMemory]) -> dict[str, list]:
    """The given memories' own columns as parallel arrays."""
    encoded = {"tags": lambda g: json.dumps(list(g.tags)), "metadata": lambda g: json.dumps(g.metadata)}
    return {
        column: [encoded[column](g) if column in encoded else getattr(g, column) for g in given]
        for column in GIVEN_COLUMNS
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
