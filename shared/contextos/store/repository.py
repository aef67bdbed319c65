"""The whole store over one database: every aggregate store in one object, for tests, benchmarks
and the tools that want all of it. Services take the ports (``contextos.ports``); the container
wires each aggregate (``documents``, ``admission``, ``reads``, ``tenants``) on its own.
"""

from __future__ import annotations

from contextos.config import DecaySettings, MergeSettings
from contextos.gate_port import ContradictionGatePort
from contextos.store.admission import AdmissionStore
from contextos.store.db import Database
from contextos.store.documents import DOCUMENT_COLUMNS, DocumentStore
from contextos.store.locks import LOCK_TENANT_SQL
from contextos.store.reads import ReadStore
from contextos.store.tenants import TenantStore

__all__ = ["DOCUMENT_COLUMNS", "LOCK_TENANT_SQL", "MemoryStore"]


class MemoryStore(DocumentStore, AdmissionStore, ReadStore, TenantStore):
    def __init__(
        self,
        db: Database,
        decay: DecaySettings,
        merge: MergeSettings | None = None,
        gate: ContradictionGatePort | None = None,
    ) -> None:
        AdmissionStore.__init__(self, db, decay, merge, gate)
        self._scope_sizes: dict[str, tuple[int, str | None, float]] = {}  # tenant → (hot, own ANN index, read at s)
