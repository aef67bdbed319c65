"""The one resolver: routers joined, domain errors mapped to one error shape in one place."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import (
    RequestUnsupportedContentType,
    RequestValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from contextos.api import edge, openapi
from contextos.api.error_shape import ErrorBody, ErrorResponse
from contextos.api.routing import LazyRestResolver
from contextos.current_settings import get_settings
from contextos.errors import ContextOSError
from contextos.observability import logger


def error_response(status: int, code: str, message: str, details: Any = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=ErrorResponse(error=ErrorBody(code=code, message=message, details=details)).model_dump(mode="json"),
    )


# Each route module, imported at the first request to a path it serves (first segment after
# /v1 or /v1/user); the order is the order routes are included when all are needed.
ROUTE_GROUPS: dict[str, tuple[str, ...]] = {
    "contextos.api.documents": ("documents", "uploads"),
    "contextos.api.context": ("context", "search"),
    "contextos.api.memories": ("memories", "graph"),
    "contextos.api.reminders": ("reminders",),
    "contextos.api.reports": ("health", "governance"),
    "contextos.api.sessions": ("sessions",),
    "contextos.api.review": ("review", "audit"),
    "contextos.api.workspace": ("workspace", "import", "export"),
    "contextos.api.settings": ("settings",),
    "contextos.api.erasure": ("erasure",),
    "contextos.api.forecast": ("forecast",),
}


def build_app() -> LazyRestResolver:
    # Agents call /v1/…, people (Cognito) /v1/user/…: one set of routes serves both paths.
    app = LazyRestResolver(ROUTE_GROUPS, enable_validation=True, strip_prefixes=["/v1/user", "/v1"])

    @app.get("/swagger", include_in_schema=False)
    def swagger() -> Response[str]:
        """Swagger UI over the completed document (``?format=json`` for the document itself)."""
        # Imported here: it loads the whole OpenAPI model, which no other route needs.
        from aws_lambda_powertools.event_handler.openapi.swagger_ui.html import generate_swagger_html

        spec = openapi.openapi_json(app)
        if (app.current_event.query_string_parameters or {}).get("format") == "json":
            return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=spec)
        assets = Path(generate_swagger_html.__code__.co_filename).parent
        html = generate_swagger_html(
            spec.replace("</", "<\\/"),
            (assets / "swagger-ui-bundle.min.js").read_text(encoding="utf-8"),
            (assets / "swagger-ui.min.css").read_text(encoding="utf-8"),
            "",  # no base URL: the assets are inlined
            None,
            False,
        )
        return Response(status_code=200, content_type="text/html", body=html)

    @app.exception_handler(ContextOSError)
    def domain_error(exc: ContextOSError) -> Response:
        if exc.status >= 500:
            logger.error("domain error", extra={"code": exc.code})
        return error_response(exc.status, exc.code, exc.message, exc.details or None)

    @app.exception_handler(RequestValidationError)
    def validation_error(exc: RequestValidationError) -> Response:
        details = [{"loc": list(e.get("loc", ())), "type": e.get("type"), "msg": e.get("msg")} for e in exc.errors()]
        return error_response(422, "validation_error", "the request does not match the schema", details)

    @app.exception_handler(RequestUnsupportedContentType)
    def unsupported_content_type(_: Exception) -> Response:
        return error_response(415, "unsupported_media_type", "a request body must be sent as application/json")

    @app.exception_handler(Exception)
    def unexpected_error(exc: Exception) -> Response:
        """A bug or an outage: logged with its trace, answered in the one error shape."""
        logger.exception("unhandled error", extra={"error_type": type(exc).__name__})
        return error_response(500, "internal_error", "something went wrong on our side; it has been logged")

    @app.not_found
    def not_found(_: Exception) -> Response:
        event = app.current_event
        allowed = allowed_methods(app, event.path)
        if allowed:
            response = error_response(
                405, "method_not_allowed", f"{event.http_method} is not allowed here; use {', '.join(allowed)}"
            )
            response.headers["Allow"] = ", ".join(allowed)
            return response
        return error_response(404, "route_not_found", "no such route")

    return app


def allowed_methods(app: LazyRestResolver, path: str) -> list[str]:
    """The methods some route answers on this path (for a 405 and its ``Allow`` header)."""
    app.include_for(path)
    stripped = app.strip_prefix(path)
    return sorted({r.method for r in app.declared if r.matches(stripped)})


def resolve(event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
    """The API function's one entry: the edge's checks, then the resolver. A method the path's
    routes do not answer goes straight to the resolver, whose 405 says so before anything else."""
    allowed = allowed_methods(app, str(event.get("path") or ""))
    if allowed and str(event.get("httpMethod") or "").upper() not in allowed:
        return app.resolve(event, context)
    try:
        event = edge.check_request(event, get_settings().edge)
    except ContextOSError as exc:
        body = ErrorResponse(error=ErrorBody(code=exc.code, message=exc.message, details=exc.details or None))
        return {
            "statusCode": exc.status,
            "headers": {"Content-Type": content_types.APPLICATION_JSON},
            "multiValueHeaders": {},
            "body": json.dumps(body.model_dump(mode="json")),
            "isBase64Encoded": False,
        }
    return app.resolve(event, context)


app = build_app()
