import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver
from aws_lambda_powertools.utilities.data_classes import APIGatewayProxyEvent
from contextos.api.auth import current_principal
from contextos.auth import presented_key
from contextos.errors import Unauthorized
from contextos.local.events import api_proxy_event
from contextos.models import Provenance


def principal_for(authorizer, body=None):
    """A bare resolver holding one event, as a route would see it (never the handler's app, whose
    routers must stay bound to it)."""
    resolver = APIGatewayRestResolver()
    resolver.current_event = APIGatewayProxyEvent(api_proxy_event("POST", "/v1/context", {}, None, body, authorizer))
    return current_principal(resolver)


def test_the_tenant_comes_from_a_lambda_authorizer_context():
    p = principal_for(
        {"tenant_id": "acme", "principal": "agent", "key_name": "bot", "provenance_ceiling": "agent_turn"}
    )
    assert (p.tenant_id, p.kind, p.subject, p.provenance_ceiling) == ("acme", "agent", "bot", Provenance.agent_turn)


def test_the_tenant_comes_from_cognito_claims():
    p = principal_for({"claims": {"sub": "user-1", "custom:tenant_id": "acme"}})
    assert (p.tenant_id, p.kind, p.provenance_ceiling) == ("acme", "user", Provenance.user_turn)


def test_a_tenant_in_the_body_is_never_used():
    with pytest.raises(Unauthorized):
        principal_for(None, body='{"tenant_id": "acme"}')


@pytest.mark.parametrize("tenant", ["", "../etc", "a b", "x" * 200])
def test_invalid_tenant_ids_from_the_authorizer_are_refused(tenant):
    with pytest.raises(Unauthorized):
        principal_for({"tenant_id": tenant})


def test_keys_are_read_from_bearer_or_x_api_key_headers():
    assert presented_key({"Authorization": "Bearer abc"}) == "abc"
    assert presented_key({"x-api-key": " k "}) == "k"
    assert presented_key({"authorization": "Basic abc"}) is None
    assert presented_key({}) is None
