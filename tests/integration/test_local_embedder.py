"""The packaged MiniLM (int8 ONNX) runs offline and gives sentence-level similarities."""

import numpy as np


def test_the_local_embedder_gives_unit_vectors_with_meaningful_similarities(local_embedder):
    dog, puppy, tax = np.array(local_embedder.embed(["dog", "puppy", "tax law"]))
    assert local_embedder.dimensions == 384 and dog.shape == (384,)
    assert np.linalg.norm(dog) == np.float32(1.0) or abs(np.linalg.norm(dog) - 1.0) < 1e-5
    assert dog @ puppy > 0.7 > 0.3 > dog @ tax


def test_batching_does_not_change_the_vectors(local_embedder):
    texts = [f"sentence number {i} about memory systems" for i in range(40)]
    batched = np.array(local_embedder.embed(texts))
    single = np.array([local_embedder.embed([t])[0] for t in texts[:3]])
    assert np.allclose(batched[:3], single, atol=1e-5)
