"""A REST resolver whose route groups are imported at the first request that needs them.

A cold start imports the handler and serves one request: importing every route module (and the
~130 models their signatures name) made each cold start pay for the whole API. Each group is a
module with a ``router``, named by the first path segments it serves; a request includes the
group its path belongs to, and anything that needs every route (the OpenAPI document, Swagger)
includes them all, in the declared order.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver


class LazyRestResolver(APIGatewayRestResolver):
    def __init__(self, groups: Mapping[str, tuple[str, ...]], **kwargs: Any) -> None:
        """``groups``: route module → the first path segments its routes serve (after the prefixes)."""
        super().__init__(**kwargs)
        self._groups = dict(groups)
        self._module_of = {segment: module for module, segments in groups.items() for segment in segments}
        self._included: set[str] = set()
        self._lock = threading.Lock()  # the local HTTP front may serve first requests concurrently

    def include_for(self, path: str) -> None:
        """Include the group that serves ``path`` (the raw path, prefixes included), if not yet."""
        segment = self._remove_prefix(path).lstrip("/").split("/", 1)[0]
        module = self._module_of.get(segment)
        if module is not None and module not in self._included:
            self._include(module)

    def include_all(self) -> None:
        for module in self._groups:
            if module not in self._included:
                self._include(module)

    def _include(self, module: str) -> None:
        with self._lock:
            if module in self._included:
                return
            self.include_router(importlib.import_module(module).router)
            self._included.add(module)

    def resolve(self, event: Any, context: Any) -> dict[str, Any]:
        self.include_for(str(event.get("path") or ""))
        return super().resolve(event, context)

    def get_openapi_schema(self, *args: Any, **kwargs: Any) -> Any:
        self.include_all()
        return super().get_openapi_schema(*args, **kwargs)
