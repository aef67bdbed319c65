"""The local MiniLM embedder: batching by length changes the cost, never the vectors or their order."""

import numpy as np
import pytest
from contextos.embedding.local import LocalMiniLMEmbedder

TEXTS = [
    "payments service: times out after thirty seconds when the ledger replica lags behind the primary",
    "cache",
    "search service: times out after sixty seconds",
    "A deliberately long definition that pads every short text of its batch " * 6,
    "tenant isolation",
]


@pytest.fixture(scope="module")
def embedder():
    return LocalMiniLMEmbedder(batch_size=2)  # several batches, each formed by length


def test_each_text_keeps_its_own_vector_in_input_order(embedder):
    together = np.asarray(embedder.embed(TEXTS))
    alone = np.asarray([embedder.embed([t])[0] for t in TEXTS])
    assert together.shape == (len(TEXTS), 384)
    assert np.allclose(together, alone, atol=1e-4)
    # and the vectors are not interchangeable: each is nearest to its own text's
    assert list((together @ alone.T).argmax(axis=1)) == list(range(len(TEXTS)))


def test_no_texts_no_vectors(embedder):
    assert embedder.embed([]) == []


def test_batches_bounded_by_tokens_and_repeated_texts_give_the_same_vectors(embedder):
    bounded = LocalMiniLMEmbedder(batch_size=16, batch_tokens=24)  # long texts alone, short ones together
    texts = [*TEXTS, TEXTS[0], "", TEXTS[1]]
    got = np.asarray(bounded.embed(texts))
    want = np.asarray(embedder.embed(texts))
    assert got.shape == (len(texts), 384)
    assert np.allclose(got, want, atol=1e-6)
    assert np.array_equal(got[len(TEXTS)], got[0]) and np.array_equal(got[-1], got[1])
    assert not np.allclose(got[0], got[1])
