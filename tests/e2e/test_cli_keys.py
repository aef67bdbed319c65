"""A key the CLI mints vouches for what its principal is: a person's own key writes at `user_turn`,
an agent's at `agent_turn`, and an agent's key cannot claim more (the API refuses, as everywhere)."""

from __future__ import annotations

import uuid

import pytest
from contextos import container
from contextos.cli import main

from tests.e2e.test_local_stack import http, stack  # noqa: F401  (the module's stack fixture)


def mint(capsys: pytest.CaptureFixture[str], tenant: str, principal: str) -> str:
    assert main(["keys", "--tenant", tenant, "--name", f"{principal}-key", "--principal", principal]) == 0
    key = capsys.readouterr().out.strip()
    assert key.startswith("ctx_") and "\n" not in key
    return key


@pytest.fixture
def same_database(stack, database_url: str, monkeypatch: pytest.MonkeyPatch):  # noqa: F811
    """The CLI in this process, on the running stack's database."""
    monkeypatch.setenv("CONTEXTOS_DATABASE_URL", database_url)
    container.reset()
    yield stack
    container.reset()


def test_a_cli_minted_user_key_writes_at_user_turn_and_an_agent_key_at_agent_turn(same_database, capsys):
    tenant = f"t-keys-{uuid.uuid4().hex[:8]}"
    user_key, agent_key = mint(capsys, tenant, "user"), mint(capsys, tenant, "agent")

    assert main(["keys", "list", "--tenant", tenant]) == 0
    listed = capsys.readouterr().out
    assert "user-key  user/user_turn" in listed and "agent-key  agent/agent_turn" in listed, listed

    recorded = {}
    for who, key in (("user", user_key), ("agent", agent_key)):
        body = {"label": f"Standup time {who}", "definition": f"The {who}'s standup is at 9:30."}
        status, admission = http(same_database, "POST", "/v1/memories", body, key=key)
        assert status == 201 and admission["status"] == "admitted", admission
        status, memory = http(same_database, "GET", f"/v1/memories/{admission['memory_id']}", key=key)
        assert status == 200, memory
        recorded[who] = (admission["provenance"], memory["provenance"])
    assert recorded == {"user": ("user_turn", "user_turn"), "agent": ("agent_turn", "agent_turn")}

    claim = {"label": "Standup room", "definition": "The standup is in room 4.", "provenance": "user_turn"}
    status, refused = http(same_database, "POST", "/v1/memories", claim, key=agent_key)
    assert status == 403 and refused["error"]["code"] == "provenance_above_ceiling", refused
