"""Amazon Titan Text Embeddings v2 through bedrock-runtime ``InvokeModel`` (1024-d, normalized).

Titan embeds one text per call, so a batch fans out over a bounded thread pool; throttling backs
off (shared across the pool's threads) and retries instead of failing.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from contextos.bedrock_calls import Backoff, call
from contextos.errors import PermanentError


class BedrockTitanEmbedder:
    def __init__(
        self,
        client: Any,
        *,
        model_id: str,
        dimensions: int = 1024,
        concurrency: int = 8,
        backoff: Backoff | None = None,
    ) -> None:
        self._client = client
        self.model_id = model_id
        self.dimensions = dimensions
        self._concurrency = concurrency
        self._backoff = backoff or Backoff()

    def embed(self, texts: list[str]) -> list[list[float]]:
        if len(texts) <= 1:
            return [self._embed_one(t) for t in texts]
        with ThreadPoolExecutor(max_workers=min(self._concurrency, len(texts))) as pool:
            return list(pool.map(self._embed_one, texts))

    def _embed_one(self, text: str) -> list[float]:
        body = {"inputText": text, "dimensions": self.dimensions, "normalize": True}
        response = call(
            self._client.invoke_model,
            self._backoff,
            "Bedrock embedding",
            modelId=self.model_id,
            body=json.dumps(body),
            contentType="application/json",
            accept="application/json",
        )
        payload = json.loads(response["body"].read())
        vector = payload["embedding"]
        if len(vector) != self.dimensions:
            raise PermanentError(f"Bedrock returned {len(vector)}-d, expected {self.dimensions}-d")
        return vector
