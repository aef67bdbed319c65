"""Every aggregate store over one database, side by side: for tests, benchmarks and tools that want
the whole store. Services never take this; each takes the ports it names (``contextos.ports``)."""

from __future__ import annotations

from dataclasses import dataclass

from contextos.config import DecaySettings, MergeSettings
from contextos.ports.gate import ContradictionGatePort
from contextos.store.admission import AdmissionStore
from contextos.store.db import Database
from contextos.store.documents import DocumentStore
from contextos.store.management import ManagementStore
from contextos.store.reads import ReadStore
from contextos.store.tenants import TenantStore
from contextos.store.unit_of_work import UnitOfWorkStore


@dataclass(frozen=True)
class Stores:
    db: Database
    documents: DocumentStore
    admission: AdmissionStore
    reads: ReadStore
    tenants: TenantStore
    management: ManagementStore
    work: UnitOfWorkStore

    @classmethod
    def over(
        cls,
        db: Database,
        decay: DecaySettings,
        merge: MergeSettings | None = None,
        gate: ContradictionGatePort | None = None,
    ) -> Stores:
        """The aggregates over ``db``; admission judges through ``gate`` (None: no contradiction gate)."""
        return cls(
            db=db,
            documents=DocumentStore(db),
            admission=AdmissionStore(db, decay, merge, gate),
            reads=ReadStore(db, decay),
            tenants=TenantStore(db),
            management=ManagementStore(db, decay),
            work=UnitOfWorkStore(db),
        )
