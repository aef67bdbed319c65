"""What the local ingestion models give, pinned: the extractor's concepts (labels, definitions,
types, importance, related labels, excerpts) on fixed documents and a conversation, and the
embedder's vectors on fixed texts. Speeding either up must not change what it gives.

The pinned file was written by the code before any speed work; rewrite it only for a change of
what is extracted or embedded, on purpose: ``python -m tests.unit.test_ingest_fidelity --write``.
"""

from __future__ import annotations

import importlib.metadata
import json
import random
import sys
from pathlib import Path

import numpy as np
import pytest
from contextos.conversations import Role, Turn
from contextos.embedding.local import LocalMiniLMEmbedder
from contextos.extraction.local import LocalConceptExtractor
from contextos.models import Provenance

PINNED = Path(__file__).parent / "data" / "ingest_fidelity.json"

HANDBOOK = """# Deployment handbook

Blue-green deployment keeps two identical production environments. The router sends traffic to one of them.
A canary release sends a small share of traffic to the new version first. Canary release catches regressions early.

## Rollback

Rollback means switching the router back to the previous environment. Blue-green deployment makes rollback fast.
We decided to use feature flags for risky changes. Feature flags let us disable a change without a deploy.

```python
router.switch(environment="blue")
```

- The payments service times out after 30 seconds.
- The search service times out after 60 seconds.
"""


def _service_notes() -> str:
    """The shape of the ingestion benchmark's documents (benchmarks/ingest.py)."""
    words = "cache shard replica quorum lease token gateway broker ledger index vector graph".split()
    rng = random.Random(5)
    paragraphs = ["# Service notes 7"]
    for _ in range(4):
        a, b, c, d = rng.sample(words, 4)
        paragraphs.append(
            f"The {a} {b} keeps every {c} {d} consistent after a failover. "
            f"A {a} {b} is reviewed weekly by the platform team. "
            f"We decided to use the {c} {d} for tenant isolation."
        )
    return "\n\n".join(paragraphs)


def documents() -> dict[str, str]:
    return {
        "handbook": HANDBOOK,
        "service_notes": _service_notes(),
        # a long third-party text, installed with spaCy (pinned) itself
        "spacy_description": importlib.metadata.distribution("spacy").metadata.get_payload(),  # type: ignore[attr-defined]
    }


TURNS = [
    Turn(
        seq=1,
        role=Role.user,
        content="I moved to Lisbon last month and started learning Portuguese.",
        provenance=Provenance.user_turn,
    ),
    Turn(
        seq=2,
        role=Role.assistant,
        content="Nice! Are you taking classes or using an app?",
        provenance=Provenance.agent_turn,
    ),
    Turn(
        seq=3,
        role=Role.user,
        content="Evening classes at the Camões Institute, twice a week. My partner Ana prefers Duolingo.",
        provenance=Provenance.user_turn,
    ),
    Turn(
        seq=4,
        role=Role.user,
        content="We decided to adopt a rescue dog named Pastel in the spring.",
        provenance=Provenance.user_turn,
    ),
]

EMBEDDED = [
    "Blue-green deployment: Blue-green deployment keeps two identical production environments.",
    "cache",
    "payments service: The payments service times out after 30 seconds.",
    "A deliberately long definition that pads every short text of its batch " * 6,
    "Camões Institute: Evening classes at the Camões Institute, twice a week.",
]


def extracted() -> dict:
    extractor = LocalConceptExtractor()
    out: dict = {
        name: [c.model_dump(mode="json") for c in extractor.extract(text)] for name, text in documents().items()
    }
    out["conversation"] = [c.model_dump(mode="json") for c in extractor.extract_conversation(TURNS)]
    return out


def embedded() -> list[list[float]]:
    return LocalMiniLMEmbedder().embed(EMBEDDED)


@pytest.fixture(scope="module")
def pinned() -> dict:
    return json.loads(PINNED.read_text())


@pytest.mark.parametrize("name", ["handbook", "service_notes", "spacy_description", "conversation"])
def test_the_extractor_gives_exactly_the_pinned_concepts(pinned, name):
    assert extracted()[name] == pinned["extracted"][name]


def test_the_pinned_documents_give_concepts_at_all(pinned):
    # a pin of nothing would pass whatever the extractor did
    assert all(len(pinned["extracted"][n]) >= 3 for n in ("handbook", "service_notes", "spacy_description"))


def test_the_embedder_gives_the_pinned_vectors(pinned):
    got = np.asarray(embedded())
    want = np.asarray(pinned["embedded"])
    assert got.shape == want.shape == (len(EMBEDDED), 384)
    assert np.allclose(got, want, atol=2e-6)


if __name__ == "__main__" and "--write" in sys.argv:
    PINNED.parent.mkdir(exist_ok=True)
    PINNED.write_text(
        json.dumps({"extracted": extracted(), "embedded": embedded()}, indent=1, ensure_ascii=False) + "\n"
    )
    print(f"wrote {PINNED}")
