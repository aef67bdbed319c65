"""A tenant graph written through the public API: workspace files (one per memory) whose
frontmatter carries typed edges to earlier memories and strength anchors spread over every band.
The browser tests and the console benchmark send these to ``POST /v1/import``."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime

from contextos.models import MemoryType
from contextos.workspace.format import render_file
from contextos.workspace.model import Strength, WorkspaceEdge, WorkspaceMemory

EDGE_TYPES = ["related", "corroborates", "contradicts", "derived_from"]
# strength anchors at now: strong (> 0.70), fading (≥ 0.40), critical (≥ 0.10), forgotten (< 0.10)
ANCHORS = [0.95, 0.55, 0.2, 0.05]
TOPICS = ["billing", "deploys", "search", "storage", "alerts", "auth", "queues", "caching", "payments", "ui", "mobile"]


def graph_files(n: int, *, edges_per_node: int = 2, seed: int = 7, prefix: str = "") -> list[dict[str, str]]:
    """``n`` memories, each with up to ``edges_per_node`` edges to earlier ones (same topic mostly)."""
    rng = random.Random(seed)
    now = datetime.now(UTC)
    ids = [uuid.uuid4() for _ in range(n)]  # fresh ids: a workspace id belongs to one tenant
    files = []
    for i, memory_id in enumerate(ids):
        topic = TOPICS[i % len(TOPICS)]
        targets = set()
        for _ in range(edges_per_node if i else 0):
            same = [j for j in range(i % len(TOPICS), i, len(TOPICS))]
            j = rng.choice(same) if same and rng.random() < 0.8 else rng.randrange(i)
            targets.add(j)
        memory = WorkspaceMemory(
            id=memory_id,
            type=MemoryType.fact,
            l0=f"{prefix}{topic} note {i}",
            l1=f"Note {i} about {topic}: the {topic} team recorded fact number {i} for the console graph.",
            importance=1 + (i * 7) % 10,
            related=[WorkspaceEdge(id=ids[j], type=rng.choice(EDGE_TYPES), weight=0.5) for j in sorted(targets)],
            strength=Strength(anchor=ANCHORS[i % len(ANCHORS)], anchored=now, rate=0.1),
        )
        files.append({"path": f"{prefix}{topic}/note-{i}.md", "content": render_file(memory)})
    return files


def batches(files: list[dict[str, str]], size: int = 1000) -> list[list[dict[str, str]]]:
    """Import requests in order: an edge only lands when its target is already stored."""
    return [files[i : i + size] for i in range(0, len(files), size)]
