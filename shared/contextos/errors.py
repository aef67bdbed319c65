"""Domain errors. Each carries a stable machine code and the HTTP status it maps to.

Handlers never catch these themselves: the API resolver maps them in one place, and the
queue handlers turn ``PermanentError`` into a ``failed`` document instead of a retry.
"""

from __future__ import annotations


class ContextOSError(Exception):
    """Base of every error the domain raises on purpose."""

    code = "internal_error"
    status = 500

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class BadRequest(ContextOSError):
    code = "bad_request"
    status = 400


class UnknownRecipe(BadRequest):
    code = "unknown_recipe"


class OccurredAtOutOfRange(BadRequest):
    code = "occurred_at_out_of_range"


class PayloadTooLarge(BadRequest):
    code = "payload_too_large"
    status = 413


class UnsupportedContent(BadRequest):
    code = "unsupported_content"
    status = 415


class Unauthorized(ContextOSError):
    code = "unauthorized"
    status = 401


class Forbidden(ContextOSError):
    code = "forbidden"
    status = 403


class ProvenanceAboveCeiling(Forbidden):
    """A credential claimed a provenance above its ceiling (S7)."""

    code = "provenance_above_ceiling"


class NotFound(ContextOSError):
    code = "not_found"
    status = 404


class Conflict(ContextOSError):
    code = "conflict"
    status = 409


class SessionEnded(Conflict):
    """A message for a session that has ended (S8): start a new session."""

    code = "session_ended"


class PermanentError(ContextOSError):
    """Processing can never succeed for this input: record the reason, do not retry."""

    code = "permanent_failure"
    status = 422


class TransientError(ContextOSError):
    """A dependency failed in a way that may pass: let the queue retry (DLQ after 3 receives)."""

    code = "transient_failure"
    status = 503


class SchemaMismatch(ContextOSError):
    """The store was built for another embedder dimension; run ``contextos reembed``."""

    code = "schema_mismatch"
    status = 500


# What the API edge refuses before any route, parser or model sees a request (api/edge.py).
class MalformedBody(BadRequest):
    code = "malformed_json"


class BodyTooDeep(BadRequest):
    code = "json_too_deep"


class NumberTooLong(BadRequest):
    code = "number_too_long"


class InvalidCharacter(ContextOSError):
    """A NUL or a lone surrogate: text PostgreSQL cannot store and UTF-8 cannot encode."""

    code = "invalid_character"
    status = 422


class EmptyParameter(ContextOSError):
    code = "empty_parameter"
    status = 422


class UnsupportedMediaType(UnsupportedContent):
    code = "unsupported_media_type"
