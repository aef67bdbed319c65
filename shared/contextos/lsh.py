"""Random-hyperplane LSH bands: cheap, tenant-scoped candidates for near-duplicate detection.

Two unit vectors at angle θ disagree on a random hyperplane with probability θ/π. With B bands of
R bits, a pair shares at least one band with probability 1 − (1 − (1 − θ/π)^R)^B. For the merge
threshold (cosine 0.93, θ ≈ 21.6°) and 16 bands of 16 bits that is about 0.89 (0.99 at cosine
0.97), while an unrelated pair (θ ≈ 90°) shares a given band with probability 2^−16 — about 25
false candidates per concept at 100k memories, each checked with the exact cosine.
Deterministic: the hyperplanes come from a fixed seed per dimension, so every process computes
the same bands.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

BANDS = 16
BITS_PER_BAND = 16
_SEED = 20_261_130


@lru_cache(maxsize=4)
def _hyperplanes(dimensions: int) -> np.ndarray:
    rng = np.random.default_rng(_SEED + dimensions)
    return rng.standard_normal((dimensions, BANDS * BITS_PER_BAND)).astype(np.float32)


def band_keys(vectors: Sequence[Sequence[float]]) -> list[list[int]]:
    """For each vector, BANDS integers: the band's index in the high bits, its hash bits below."""
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.size == 0:
        return []
    bits = (matrix @ _hyperplanes(matrix.shape[1])) > 0
    weights = 1 << np.arange(BITS_PER_BAND, dtype=np.int64)
    bands = bits.reshape(len(matrix), BANDS, BITS_PER_BAND).astype(np.int64) @ weights
    offsets = np.arange(BANDS, dtype=np.int64) << BITS_PER_BAND
    return (bands + offsets).tolist()
