"""What benchmarks share: a fresh embedded store, a synthetic corpus, one bulk loader, timing.

The bulk loader writes through the shared test writer (``tests.memory_writer.add_memories``: memories,
items, vectors with their LSH band keys and signatures, the band index), so a benchmark's data
has every column the schema has; a hand-written INSERT would drift from the migrations.
``tests/integration/test_bench_fixtures.py`` checks the loaded rows against what the read and
admission paths expect.
"""

from __future__ import annotations

import math
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar
from uuid import UUID

import numpy as np
from contextos.models import MemoryCandidate, Provenance
from contextos.settings import Settings
from contextos.store.db import Database
from contextos.store.dialect import get_dialect
from contextos.store.embedded import embedded_database_url
from contextos.store.migrate import migrate
from contextos.store.stores import Stores

from tests.memory_writer import add_memories

T = TypeVar("T")
DIM = 384
TYPES = ("problem", "decision", "fact", "entity", "event", "preference", "code")
EMBEDDER_ID = "bench"
LOAD_BATCH = 1000


# -- timing -------------------------------------------------------------------------------------
def timed(fn: Callable[..., T], *args: object, **kwargs: object) -> tuple[float, T]:
    """``fn(*args, **kwargs)`` and how long it took, in milliseconds (one decimal)."""
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    return round((time.perf_counter() - started) * 1000, 1), result


def percentile(samples: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of the samples, nearest rank (p50 is the median of an odd count)."""
    ordered = sorted(samples)
    return ordered[max(0, min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1))]


def summary_ms(samples: Sequence[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(samples), 2),
        "p95_ms": round(percentile(samples, 0.95), 2),
        "mean_ms": round(statistics.fmean(samples), 2),
    }


# -- the store ----------------------------------------------------------------------------------
@contextmanager
def embedded_database(
    data_dir: Path | None = None, *, min_size: int = 1, max_size: int = 4, embedder_id: str = EMBEDDER_ID
) -> Iterator[Database]:
    """A migrated embedded PostgreSQL under ``data_dir`` (a fresh temp dir by default), pooled."""
    url = embedded_database_url(data_dir or Path(tempfile.mkdtemp(prefix="contextos-bench-")))
    dialect = get_dialect("postgres")
    migrate(url, dialect, DIM, embedder_id)
    db = Database(url, dialect, min_size=min_size, max_size=max_size)
    try:
        yield db
    finally:
        db.close()


@contextmanager
def embedded_store(data_dir: Path, settings: Settings | None = None, *, max_size: int = 4) -> Iterator[Stores]:
    """A migrated embedded PostgreSQL under ``data_dir`` and the store over it (no gate: the loads
    below store as given)."""
    settings = settings or Settings()
    with embedded_database(data_dir, max_size=max_size) as db:
        yield Stores.over(db, settings.decay, settings.merge)


def analyze(db: Database) -> None:
    """Fresh planner statistics after a bulk load (as autovacuum would give a steady state)."""
    with db.system_tx() as conn:
        conn.execute("RESET ROLE")
        conn.execute("ANALYZE")


# -- the corpus ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Corpus:
    candidates: list[MemoryCandidate]
    at: list[datetime]  # when each was learned
    near_duplicates: int  # how many were planted as near duplicates (cosine ≈ 0.99) of another


def corpus(size: int, rng: np.random.Generator, *, near_duplicate_share: float = 0.02) -> Corpus:
    """``size`` memories with random unit vectors; a share of them near duplicates of another of the
    same type; one in twenty learned 40 days ago."""
    vectors = rng.standard_normal((size, DIM)).astype(np.float32)
    definitions = [f"Memory {i} is about topic {i % 97} and component {i % 13}." for i in range(size)]
    duplicates = rng.choice(size, int(size * near_duplicate_share), replace=False)
    for i in duplicates:
        j = (i + len(TYPES)) % size
        vectors[i] = vectors[j] + 0.1 * rng.standard_normal(DIM)
        definitions[i] = "In short: " + definitions[j]
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    now = datetime.now(UTC)
    candidates = [
        MemoryCandidate(
            norm_key=f"memory {i}",
            label=f"Memory {i}",
            definition=definitions[i],
            type=TYPES[i % len(TYPES)],
            importance=int(1 + i % 10),
            embedding=vectors[i].tolist(),
            decay_rate=0.15,
            provenance=Provenance.user_upload,
            base_trust=0.9,
        )
        for i in range(size)
    ]
    at = [now - timedelta(days=40 if i % 20 == 0 else 0) for i in range(size)]
    return Corpus(candidates, at, len(duplicates))


def bulk_load(store: Stores, tenant_id: str, data: Corpus, *, batch: int = LOAD_BATCH) -> list[UUID]:
    """Store every memory of the corpus as given (no gates, no merging), in batches; their ids in order."""
    ids: list[UUID] = []
    for start in range(0, len(data.candidates), batch):
        end = start + batch
        ids += add_memories(
            store, tenant_id, data.candidates[start:end], embedder_id=EMBEDDER_ID, at=data.at[start:end]
        )
    return ids
