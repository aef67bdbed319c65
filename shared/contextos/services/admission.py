"""The one way concepts become memories (S4 steps 4-7), whatever they came from.

Documents and conversations both end here: validation, then candidates (embeddings, normalized
keys, decay rates, provenance and base trust per concept), then the store's single transaction
(merging, memory_items pointing at the source, related edges, the source's own bookkeeping).
Every source passes the governance gates (S7): the trust gate here, between the candidates
and the store; the contradiction gate inside the store's transaction, under the tenant lock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace

from contextos.decay import decay_rate
from contextos.embedding import Embedder
from contextos.extraction.validation import validate
from contextos.governance_models import HeldCandidate
from contextos.models import Concept, MemoryCandidate, Provenance, StoreResult, ValidationReport
from contextos.normalization import names_one_thing, norm_key, source_mark, turn_words
from contextos.ports.admission import AdmissionPort, DocumentAdmission
from contextos.redaction import clean_label
from contextos.scopes import Scope
from contextos.services.governance import TrustGate
from contextos.settings import Settings
from contextos.sources import ConceptSource, DocumentSource


def unplaceholdered(concepts: Sequence[Concept]) -> list[Concept]:
    """A memory is never labelled with a redaction placeholder (S7): such a label loses the
    placeholder, and a concept with nothing else to its name is dropped. Related names follow."""
    out = []
    for c in concepts:
        label = clean_label(c.label)
        if label is None:
            continue
        related = [r for r in (clean_label(r) for r in c.related) if r]
        out.append(
            c
            if label == c.label and related == c.related
            else c.model_copy(update={"label": label, "related": related})
        )
    return out


def embedded_text(concept: Concept, head: int) -> str:
    """What a concept's vector is of: its label and the head of its definition. A kept turn's
    vector is of its words alone (S8): its label says only where it was said, and its ``[time,
    speaker]`` prefix (``conversations.turn_excerpt``) is no part of what was meant."""
    if concept.key:
        return turn_words(concept.definition)[:head]
    return f"{concept.label}: {concept.definition[:head]}"


def _source_tag(source: ConceptSource) -> str:
    """What a common noun's key names its source by: the document, or a digest of the session's id
    (an id may hold "@", which starts a key's owner suffix, ``scopes.key_owner``)."""
    if isinstance(source, DocumentSource):
        return f"d={source.document_id.hex}"
    return f"s={hashlib.blake2b(source.session_id.encode(), digest_size=8).hexdigest()}"


def _source_ids(source: ConceptSource) -> tuple:
    """(document id, session id) of a source, one of them None."""
    if isinstance(source, DocumentSource):
        return source.document_id, None
    return None, source.session_id


@dataclass(frozen=True)
class AdmissionResult:
    report: ValidationReport
    stored: StoreResult


@dataclass(frozen=True)
class PreparedAdmission:
    """A source's concepts ready for the store: validated, embedded, through the trust gate, with
    the validation counts joined to the source's."""

    report: ValidationReport
    candidates: list[MemoryCandidate]
    held: list[HeldCandidate]
    source: ConceptSource


@dataclass
class Admission:
    settings: Settings
    store: AdmissionPort
    embedder: Embedder

    def admit(
        self,
        tenant_id: str,
        concepts: Sequence[Concept],
        source: ConceptSource,
        *,
        source_text: str | None = None,
        hold_reason: str | None = None,
    ) -> AdmissionResult:
        """Validate, embed, pass the trust gate (S7) and store ``concepts`` from ``source`` in one
        transaction; held candidates go to the review queue in that same transaction, nowhere else."""
        prepared = self.prepare(tenant_id, concepts, source, source_text=source_text, hold_reason=hold_reason)
        return self.store_prepared(tenant_id, prepared)

    def prepare(
        self,
        tenant_id: str,
        concepts: Sequence[Concept],
        source: ConceptSource,
        *,
        source_text: str | None = None,
        hold_reason: str | None = None,
    ) -> PreparedAdmission:
        """Everything before the store's transaction. A concept's own ``provenance`` (a
        conversation's speaker) wins over the source's. The validation counts join the source's
        counts, which the store records with the outcome. ``source_text`` (the document or
        transcript) is what the trust gate reads each candidate's content signals against."""
        cfg = self.settings.extraction
        concepts = unplaceholdered(concepts)
        report = validate(
            concepts, min_definition_chars=cfg.min_definition_chars, generic_modifiers=cfg.generic_modifiers
        )
        owner = self.store.source_owner(tenant_id, *_source_ids(source))  # S11: whose memories these become
        candidates, held = TrustGate(self.settings).split(
            self.candidates(report.accepted, source.provenance, owner=owner, source=source),
            source_text=source_text,
            hold_reason=hold_reason,
        )
        counts = source.counts | {
            "accepted": len(report.accepted),
            "rejected": report.rejected,
            "rejected_total": report.rejected_total,
            "related_dropped": report.dropped_related,
        }
        return PreparedAdmission(report, candidates, held, replace(source, counts=counts))

    def store_prepared(self, tenant_id: str, prepared: PreparedAdmission) -> AdmissionResult:
        """One prepared source in its own transaction, then its fresh vectors settled."""
        stored = self.store.store_concepts(
            tenant_id, prepared.candidates, prepared.source, embedder_id=self.embedder.model_id, held=prepared.held
        )
        self._settle(tenant_id)
        return AdmissionResult(report=prepared.report, stored=stored)

    def store_documents(self, tenant_id: str, prepared: Sequence[PreparedAdmission]) -> list[AdmissionResult]:
        """Several prepared documents of one tenant in one transaction (``admit_documents``: all or
        nothing, so a failure raises and the caller stores them one by one), then one settling."""
        documents = []
        for p in prepared:
            assert isinstance(p.source, DocumentSource)
            documents.append(DocumentAdmission(p.candidates, p.source, p.held))
        stored = self.store.admit_documents(tenant_id, documents, embedder_id=self.embedder.model_id)
        self._settle(tenant_id, documents=len(documents))
        return [AdmissionResult(report=p.report, stored=s) for p, s in zip(prepared, stored, strict=True)]

    def _settle(self, tenant_id: str, *, documents: int = 1) -> None:
        """Off the sources' transaction: move fresh vectors into the ANN index (the batch allowance
        per document admitted)."""
        self.store.settle_vectors(tenant_id, limit=self.settings.merge.settle_batch * documents)

    def _key(self, concept: Concept, source: ConceptSource | None) -> str:
        """A concept's merge key: a kept turn's is what was said (``turn_key``); a label's is its
        normalized words, and when the label is a common noun ("Installation" in two READMEs, "Hard
        work" in two chats: each source's own) also its source's mark, so it merges by key only
        with what the same source said (precision before recall: a person confirms more through
        governance)."""
        if concept.key:
            return concept.key
        modifiers = self.settings.extraction.generic_modifiers
        key = norm_key(concept.label, modifiers)
        if source is None or self.settings.merge.common_nouns_across_sources:
            return key
        text = " ".join([concept.definition, *concept.excerpts])
        return key if names_one_thing(concept.label, text, modifiers) else key + source_mark(_source_tag(source))

    def candidates(
        self,
        concepts: Sequence[Concept],
        default: Provenance,
        *,
        owner: Scope | None = None,
        source: ConceptSource | None = None,
    ) -> list[MemoryCandidate]:
        """Embed every concept in one call and give each its key (namespaced by ``owner``, so it
        merges only with that owner's memories; a common noun's also by ``source``, see
        ``_key``), decay rate and trust."""
        if not concepts:
            return []
        # The label and the head of the definition: what the concept is, not everything the source
        # said about it (that stays searchable as text), at a cost that does not grow with it.
        head = self.settings.extraction.embedded_definition_chars
        vectors = self.embedder.embed([embedded_text(c, head) for c in concepts])
        suffix = owner.key_suffix() if owner else ""
        # a kept turn's key is what was said (``turn_key``), not its label's words
        keys = [self._key(c, source) + suffix for c in concepts]
        key_of_label = {c.label: k for c, k in zip(concepts, keys, strict=True)}
        out = []
        for c, key, vector in zip(concepts, keys, vectors, strict=True):
            provenance = c.provenance or default
            out.append(
                MemoryCandidate(
                    norm_key=key,
                    label=c.label,
                    definition=c.definition,
                    type=c.type,
                    importance=c.importance,
                    related_keys=[key_of_label[r] for r in c.related if r in key_of_label],
                    embedding=vector,
                    decay_rate=decay_rate(c.importance, c.type, self.settings.decay),
                    provenance=provenance,
                    base_trust=self.settings.governance.trust_of(provenance),
                    excerpts=c.excerpts,
                    said_at=getattr(c, "said_at", None),  # a conversation's concept: when it was said
                )
            )
        return out
