"""What governance costs (issue 6): the contradiction gate on the store path, the audit chain's
trigger on inserts, and ``audit verify``.

- store path with and without the contradiction gate (local judge), into a tenant that already
  holds ``--existing`` memories; half of each document's concepts sit near an existing memory
  (cosine ≈ 0.8, above the 0.6 floor), so the judge really runs;
- audit rows per second through the hash-chaining trigger, one row per statement and 500 rows
  per statement, beside the same inserts with the trigger disabled;
- chain verification speed (entries per second, recomputed in Python).

Run: ``.venv/bin/python benchmarks/admission_gates.py [--existing 20000] [--docs 40]``. A fresh embedded
PostgreSQL is started in a temp dir, so nothing touches ``.contextos/``.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path

import numpy as np
import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.config import Settings
from contextos.decay import decay_rate
from contextos.judge.local import LocalHeuristicJudge
from contextos.models import MemoryCandidate, Provenance
from contextos.services.governance import GovernanceService
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.governance import ContradictionGate, GovernanceStore
from contextos.store.migrate import migrate
from contextos.store.repository import MemoryStore

from benchmarks.ingest import DIM, WORDS, preload, unit_vectors
from benchmarks.report import write_report


def preloaded_vectors(n: int) -> np.ndarray:
    """The vectors ``benchmarks.ingest.preload`` wrote (same seed, same order)."""
    rng = np.random.default_rng(11)
    return np.vstack([unit_vectors(min(10_000, n - s), rng) for s in range(0, n, 10_000)])


def near(v: np.ndarray, cosine: float, rng: np.random.Generator) -> np.ndarray:
    u = rng.standard_normal(DIM).astype(np.float32)
    u -= u.dot(v) * v
    u /= np.linalg.norm(u)
    return cosine * v + np.sqrt(1 - cosine**2) * u


def documents(settings: Settings, existing: np.ndarray, docs: int, size: int, seed: int) -> list[list[MemoryCandidate]]:
    rng, nrng = random.Random(seed), np.random.default_rng(seed)
    fresh = unit_vectors(docs * size, nrng)
    out = []
    for d in range(docs):
        batch = []
        for i in range(size):
            a, b, c = rng.sample(WORDS, 3)
            vector = near(existing[rng.randrange(len(existing))], 0.8, nrng) if i % 2 else fresh[d * size + i]
            batch.append(
                MemoryCandidate(
                    norm_key=f"{a} {b} {c} {seed}-{d}-{i}",
                    label=f"{a} {b} {c} {seed}-{d}-{i}",
                    definition=f"The {a} {b} keeps the {c} consistent when a node fails (doc {d}).",
                    type="fact",
                    importance=5,
                    embedding=vector.tolist(),
                    decay_rate=decay_rate(5, "fact", settings.decay),
                    provenance=Provenance.user_upload,
                    base_trust=0.9,
                )
            )
        out.append(batch)
    return out


def store_rate(store: MemoryStore, tenant: str, batches: list[list[MemoryCandidate]]) -> tuple[float, int]:
    judged = 0
    started = time.perf_counter()
    for batch in batches:
        with store.db.tenant_tx(tenant) as conn:
            _, counts = store.admit(conn, tenant, batch, embedder_id="bench", actor="bench")
        judged += counts["judged"]
    return sum(len(b) for b in batches) / (time.perf_counter() - started), judged


def audit_rate(url: str, tenant: str, rows: int, per_statement: int, *, chained: bool) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        if not chained:
            conn.execute("ALTER TABLE audit_log DISABLE TRIGGER audit_log_chain")
        try:
            started = time.perf_counter()
            for _ in range(rows // per_statement):
                conn.execute(
                    """INSERT INTO audit_log (tenant_id, actor, action, memory_id, details)
                       SELECT %s, 'bench', 'admitted', gen_random_uuid(), jsonb_build_object('n', g)
                       FROM generate_series(1, %s) g""",
                    [tenant, per_statement],
                )
            return rows / (time.perf_counter() - started)
        finally:
            if not chained:
                conn.execute("ALTER TABLE audit_log ENABLE TRIGGER audit_log_chain")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--existing", type=int, default=20_000)
    parser.add_argument("--docs", type=int, default=40)
    parser.add_argument("--size", type=int, default=12)
    parser.add_argument("--audit-rows", type=int, default=20_000)
    args = parser.parse_args()

    settings = Settings()
    url = embedded_database_url(Path(tempfile.mkdtemp(prefix="contextos-bench-")))
    migrate(url, get_dialect("postgres"), DIM, "bench")
    db = Database(url, get_dialect("postgres"), max_size=4)
    tenant = f"bench-{uuid.uuid4().hex[:8]}"
    preload(url, tenant, args.existing)
    existing = preloaded_vectors(args.existing)

    plain = MemoryStore(db, settings.decay, settings.merge)
    gated = MemoryStore(
        db,
        settings.decay,
        settings.merge,
        gate=ContradictionGate(LocalHeuristicJudge(), settings.governance),
    )
    without_gate, _ = store_rate(plain, tenant, documents(settings, existing, args.docs, args.size, 1))
    with_gate, judged = store_rate(gated, tenant, documents(settings, existing, args.docs, args.size, 2))

    audit_tenant = f"audit-{uuid.uuid4().hex[:8]}"
    unchained_500 = audit_rate(url, audit_tenant + "-x", args.audit_rows, 500, chained=False)
    chained_500 = audit_rate(url, audit_tenant, args.audit_rows, 500, chained=True)
    unchained_1 = audit_rate(url, audit_tenant + "-y", args.audit_rows // 10, 1, chained=False)
    chained_1 = audit_rate(url, audit_tenant, args.audit_rows // 10, 1, chained=True)

    service = GovernanceService(settings=settings, store=plain, governance=GovernanceStore(db), embedder=None)
    started = time.perf_counter()
    report = service.verify(audit_tenant)
    verify_rate = report.entries / (time.perf_counter() - started)
    assert report.ok, report.problems

    figures = {
        "existing_memories": args.existing,
        "concepts_per_document": args.size,
        "store_concepts_per_s_without_gate": round(without_gate, 1),
        "store_concepts_per_s_with_gate": round(with_gate, 1),
        "gate_cost_ratio": round(without_gate / with_gate, 2),
        "judged_pairs": judged,
        "audit_rows_per_s_500_per_statement_chained": round(chained_500),
        "audit_rows_per_s_500_per_statement_unchained": round(unchained_500),
        "audit_rows_per_s_single_chained": round(chained_1),
        "audit_rows_per_s_single_unchained": round(unchained_1),
        "verify_entries": report.entries,
        "verify_entries_per_s": round(verify_rate),
    }
    path = write_report(
        "admission_gates",
        figures,
        title="Governance costs: contradiction gate, audit hash chain, verify",
        notes=[
            "Store path: S4 step 7 with precomputed embeddings, one transaction per document, local judge.",
            "Half of each document's concepts are placed at cosine 0.8 to an existing memory, so they are judged.",
            "Audit inserts: the same INSERTs with the chaining trigger enabled and disabled.",
        ],
    )
    db.close()
    print(path.read_text())


if __name__ == "__main__":
    main()
