"""A REST resolver whose route groups are imported at the first request that needs them.

A cold start imports the handler and serves one request: importing every route module (and the
~130 models their signatures name) made each cold start pay for the whole API. Each group is a
module with a ``router``, named by the first path segments it serves; a request includes the
group its path belongs to, and anything that needs every route (the OpenAPI document, Swagger)
includes them all, in the declared order.
"""

from __future__ import annotations

import importlib
import inspect
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

# A path parameter as Powertools matches one (RFC 3986's unreserved, sub-delims and the unsafe
# characters it lets through), and a REST rule's trailing slashes.
_PARAMETER = re.compile(r"<(\w+)>")
_SEGMENT = r"[-._~()'!*:@,;=+&$%<> \[\]{}|^\w]+"


@dataclass(frozen=True)
class DeclaredRoute:
    """A route as this resolver registered it: what the OpenAPI document's completion and a 405's
    ``Allow`` read, without reaching into the resolver's own tables."""

    method: str
    rule: str
    func: Callable[..., Any]
    include_in_schema: bool

    @property
    def openapi_path(self) -> str:
        return _PARAMETER.sub(r"{\1}", self.rule)

    def matches(self, path: str) -> bool:
        """Whether this route's rule matches ``path`` (with the prefixes stripped)."""
        return re.match(f"^{_PARAMETER.sub(lambda _: _SEGMENT, self.rule)}/*$", path) is not None


_ROUTE_PARAMETERS = inspect.signature(APIGatewayRestResolver.route)


class LazyRestResolver(APIGatewayRestResolver):
    def __init__(self, groups: Mapping[str, tuple[str, ...]], **kwargs: Any) -> None:
        """``groups``: route module → the first path segments its routes serve (after the prefixes)."""
        super().__init__(**kwargs)
        self.prefixes = [p for p in kwargs.get("strip_prefixes") or [] if isinstance(p, str)]
        self.declared: list[DeclaredRoute] = []
        self._groups = dict(groups)
        self._module_of = {segment: module for module, segments in groups.items() for segment in segments}
        self._included: set[str] = set()
        self._lock = threading.Lock()  # the local HTTP front may serve first requests concurrently

    def route(self, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
        """Powertools' route decorator, each route it registers also recorded in ``declared``."""
        register = super().route(*args, **kwargs)
        bound = _ROUTE_PARAMETERS.bind(self, *args, **kwargs)
        bound.apply_defaults()
        rule, method = bound.arguments["rule"], bound.arguments["method"]
        methods = (method,) if isinstance(method, str) else tuple(method)
        shown = bool(bound.arguments["include_in_schema"])

        def record(func: Any) -> Any:
            self.declared += [DeclaredRoute(m.upper(), rule, func, shown) for m in methods]
            return register(func)

        return record

    def strip_prefix(self, path: str) -> str:
        """``path`` without the first configured prefix it starts with ("/" when it is the prefix)."""
        for prefix in self.prefixes:
            if path == prefix:
                return "/"
            if prefix and path.startswith(f"{prefix}/"):
                return path[len(prefix) :]
        return path

    def include_for(self, path: str) -> None:
        """Include the group that serves ``path`` (the raw path, prefixes included), if not yet."""
        segment = self.strip_prefix(path).lstrip("/").split("/", 1)[0]
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
