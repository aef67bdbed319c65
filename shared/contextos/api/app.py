"""The one resolver: routers joined, domain errors mapped to one error shape in one place."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import Server
from pydantic import BaseModel

from contextos.api import context, documents, memories, reminders, reports, review, sessions
from contextos.api import workspace as workspace_api
from contextos.errors import ContextOSError
from contextos.observability import logger


class ErrorBody(BaseModel):
    code: str
    message: str
    details: Any = None


class ErrorResponse(BaseModel):
    """Every 4xx/5xx carries this shape; ``code`` is stable, ``message`` is for people."""

    error: ErrorBody


def error_response(status: int, code: str, message: str, details: Any = None) -> Response:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=ErrorResponse(error=ErrorBody(code=code, message=message, details=details)).model_dump(mode="json"),
    )


def build_app() -> APIGatewayRestResolver:
    # Agents call /v1/…, people (Cognito) /v1/user/…: one set of routes serves both paths.
    app = APIGatewayRestResolver(enable_validation=True, strip_prefixes=["/v1/user", "/v1"])
    app.include_router(documents.router)
    app.include_router(context.router)
    app.include_router(memories.router)
    app.include_router(reminders.router)
    app.include_router(reports.router)
    app.include_router(sessions.router)
    app.include_router(review.router)
    app.include_router(workspace_api.router)
    app.enable_swagger(path="/swagger", title="ContextOS API", version="0.1.0", servers=[Server(url="/v1")])

    @app.exception_handler(ContextOSError)
    def domain_error(exc: ContextOSError) -> Response:
        if exc.status >= 500:
            logger.error("domain error", extra={"code": exc.code})
        return error_response(exc.status, exc.code, exc.message, exc.details or None)

    @app.exception_handler(RequestValidationError)
    def validation_error(exc: RequestValidationError) -> Response:
        details = [{"loc": list(e.get("loc", ())), "type": e.get("type"), "msg": e.get("msg")} for e in exc.errors()]
        return error_response(422, "validation_error", "the request does not match the schema", details)

    @app.exception_handler(Exception)
    def unexpected_error(exc: Exception) -> Response:
        """A bug or an outage: logged with its trace, answered in the one error shape."""
        logger.exception("unhandled error", extra={"error_type": type(exc).__name__})
        return error_response(500, "internal_error", "something went wrong on our side; it has been logged")

    @app.not_found
    def not_found(_: Exception) -> Response:
        return error_response(404, "route_not_found", "no such route")

    return app


app = build_app()
