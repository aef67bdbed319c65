"""Reading memories and their provenance: memory → sources and document → memories (S3, S4.5)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from contextos.config import DecaySettings
from contextos.decay import band_of
from contextos.models import DocumentMemories, MemoryDetail, MemorySource, MemorySummary
from contextos.store.repository import MemoryStore


@dataclass
class MemoryService:
    store: MemoryStore
    decay: DecaySettings

    def get(self, tenant_id: str, memory_id: UUID) -> MemoryDetail:
        row = self.store.get_memory(tenant_id, memory_id)
        sources = [MemorySource.model_validate(s) for s in self.store.sources_of_memory(tenant_id, memory_id)]
        strength = float(row["strength_now"])
        return MemoryDetail(
            **{k: row[k] for k in MemoryDetail.model_fields if k in row and k not in ("strength", "band")},
            strength=strength,
            band=band_of(strength, self.decay),
            sources=sources,
        )

    def of_document(self, tenant_id: str, document_id: UUID) -> DocumentMemories:
        self.store.get_document(tenant_id, document_id)  # 404 for another tenant's or a missing document
        rows = self.store.memories_of_document(tenant_id, document_id)
        return DocumentMemories(document_id=document_id, memories=[MemorySummary.model_validate(r) for r in rows])
