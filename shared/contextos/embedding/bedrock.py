"""Amazon Titan Text Embeddings v2 through bedrock-runtime ``InvokeModel`` (1024-d, normalized).

Titan embeds one text per call, so a batch fans out over a bounded thread pool; botocore's
adaptive retry mode slows down on throttling instead of failing.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from botocore.exceptions import ClientError

from contextos.errors import PermanentError, TransientError

_TRANSIENT_CODES = {
    "ThrottlingException",
    "ServiceUnavailableException",
    "ModelNotReadyException",
    "InternalServerException",
    "ModelTimeoutException",
}


class BedrockTitanEmbedder:
    def __init__(self, client: Any, *, model_id: str, dimensions: int = 1024, concurrency: int = 8) -> None:
        self._client = client
        self.model_id = model_id
        self.dimensions = dimensions
        self._concurrency = concurrency

    def embed(self, texts: list[str]) -> list[list[float]]:
        if len(texts) <= 1:
            return [self._embed_one(t) for t in texts]
        with ThreadPoolExecutor(max_workers=min(self._concurrency, len(texts))) as pool:
            return list(pool.map(self._embed_one, texts))

    def _embed_one(self, text: str) -> list[float]:
        body = {"inputText": text, "dimensions": self.dimensions, "normalize": True}
        try:
            response = self._client.invoke_model(
                modelId=self.model_id,
                body=json.dumps(body),
                contentType="application/json",
                accept="application/json",
            )
        except ClientError as exc:
            code = exc.response.get("Error", {}).get("Code", "")
            if code in _TRANSIENT_CODES:
                raise TransientError(f"Bedrock embedding failed transiently: {code}") from exc
            raise PermanentError(f"Bedrock embedding refused the input: {code}") from exc
        payload = json.loads(response["body"].read())
        vector = payload["embedding"]
        if len(vector) != self.dimensions:
            raise PermanentError(f"Bedrock returned {len(vector)}-d, expected {self.dimensions}-d")
        return vector
