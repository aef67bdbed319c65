"""/v1/context: the ranked, budgeted context block for a query."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import Router

from contextos import container
from contextos.api.auth import Verb, require
from contextos.models import ContextRequest, ContextResult, SearchRequest, SearchResult

router = Router()


@router.post("/context", summary="Build a context block (dry_run: inspect without side effects)")
def get_context(body: ContextRequest) -> ContextResult:
    principal = require(router, Verb.read)
    if not principal.scope.empty:
        body = body.model_copy(update={"scope": principal.scope.confine(body.scope)})
    return container.retrieval().context(principal.tenant_id, body)


@router.post("/search", summary="Rank memories for a query, with every score component; changes nothing")
def search(body: SearchRequest) -> SearchResult:
    principal = require(router, Verb.read)
    if not principal.scope.empty:
        body = body.model_copy(update={"scope": principal.scope.confine(body.scope)})
    return container.retrieval().search(principal.tenant_id, body)
