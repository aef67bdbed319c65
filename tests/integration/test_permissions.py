"""Who may do what (S11): every cell of the permission matrix, through each surface that offers
the verb — REST (the real authorizer function, then the API function, with real keys), MCP (the
server's tools over an in-process client, the caller from its key) and the CLI (its verbs
against the local HTTP front).

A refused cell is a 403 ``forbidden`` naming the verb; an allowed one is anything but that."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
from contextos import container
from contextos.access import ALL_VERBS, DEFAULT_VERBS, FORGET_OWN, KeyScope, Verb
from contextos.local.front import HttpRequest
from contextos.models import Provenance

# Principals: a person's key, an agent's key with the defaults, and an agent key configured for
# exactly these verbs (per-key grants).
CUSTOM_VERBS = ["read", "edit", "audit", "export"]
PRINCIPALS = {
    "user": {"principal": "user", "provenance_ceiling": Provenance.user_turn},
    "agent": {"principal": "agent"},
    "custom-agent": {"principal": "agent", "verbs": CUSTOM_VERBS},
}


def expected(principal: str, verb: str) -> bool:
    granted = (
        set(CUSTOM_VERBS) if principal == "custom-agent" else set(DEFAULT_VERBS[PRINCIPALS[principal]["principal"]])
    )
    if verb == FORGET_OWN:
        return bool(granted & {"forget", FORGET_OWN})
    return verb in granted


def rest(key: str, method: str, path: str, body: object = None) -> tuple[int, dict]:
    """One request through the local front's handler: the authorizer function, then the API's."""
    from contextos.local.bridge import handle

    headers = {"authorization": f"Bearer {key}", "content-type": "application/json"}
    path, _, query = path.partition("?")
    data = json.dumps(body).encode() if body is not None else None
    reply = handle(HttpRequest(method, path, query, headers, data, "127.0.0.1"))
    try:
        payload = json.loads(reply.body or b"null")
    except ValueError:
        payload = {}
    return reply.status, payload if isinstance(payload, dict) else {}


class World:
    """One tenant with a key per principal, a memory each of them taught, a person's memory, a
    protected one, a document and a held candidate."""

    def __init__(self, tenant: str) -> None:
        self.tenant = tenant
        self.keys = {
            name: container.keys().create(tenant, f"{name}-{uuid.uuid4().hex[:6]}", **spec)  # type: ignore[arg-type]
            for name, spec in PRINCIPALS.items()
        }
        # A memory each key taught (a key that may not write gets one the person taught instead).
        self.own = {
            name: self._memory(key if expected(name, "write") else self.keys["user"], f"Taught by {name}")
            for name, key in self.keys.items()
        }
        self.person = self._memory(self.keys["user"], "Release cadence")
        self.protected = self._memory(self.keys["user"], "Protected rule")
        status, _ = rest(self.keys["user"], "PATCH", f"/v1/memories/{self.protected}", {"protected": True})
        assert status == 200
        status, body = rest(self.keys["user"], "POST", "/v1/documents", {"text": "Releases go out on Tuesdays."})
        assert status == 202, body
        self.document = body["id"]

    def _memory(self, key: str, label: str) -> str:
        status, body = rest(
            key,
            "POST",
            "/v1/memories",
            {"label": label, "definition": f"{label} matters for the team.", "type": "fact"},
        )
        assert status == 201, body
        return body["memory_id"]

    def call(self, principal: str, verb: str) -> tuple[int, dict]:
        """The REST call that needs ``verb``."""
        key = self.keys[principal]
        workspace_file = {
            "path": "05-resources/new.md",
            "content": "---\nl0: Imported rule\ntype: fact\n---\nA rule.\n",
        }
        match verb:
            case "read":
                return rest(key, "POST", "/v1/search", {"query": "release cadence"})
            case "write":
                return rest(
                    key, "POST", "/v1/memories", {"label": "New fact", "definition": "A new fact here.", "type": "fact"}
                )
            case "edit":
                return rest(key, "PATCH", f"/v1/memories/{self.person}", {"definition": "Releases happen weekly now."})
            case "forget":  # someone else's memory
                return rest(key, "DELETE", f"/v1/memories/{self.person}")
            case "forget:own":
                return rest(key, "DELETE", f"/v1/memories/{self.own[principal]}")
            case "forget-document":
                return rest(key, "DELETE", f"/v1/documents/{self.document}")
            case "unlock":
                body = {"definition": "The rule changed.", "unlock": True}
                return rest(key, "PATCH", f"/v1/memories/{self.protected}", body)
            case "export":
                return rest(key, "GET", "/v1/export")
            case "import":
                return rest(key, "POST", "/v1/import", {"files": [workspace_file]})
            case "audit":
                return rest(key, "GET", "/v1/audit")
            case "review":
                return rest(key, "GET", "/v1/review")
            case "erase":
                return rest(key, "POST", "/v1/erasure/user", {"user_id": "nobody-here"})
        raise AssertionError(verb)


@pytest.fixture
def world(configured, tenant) -> World:
    return World(tenant)


def assert_cell(status: int, body: dict, allowed: bool, verb: str) -> None:
    if allowed:
        assert status < 500 and not (status == 403 and body.get("error", {}).get("code") == "forbidden"), (status, body)
        assert status < 400, (status, body)
    else:
        assert status == 403 and body["error"]["code"] == "forbidden", (status, body)
        needs = {"unlock": {"edit", "unlock"}, "forget:own": {"forget"}}.get(verb, {verb})
        assert body["error"]["details"].get("verb", "forget") in needs


@pytest.mark.parametrize("verb", sorted(ALL_VERBS | {FORGET_OWN}))
@pytest.mark.parametrize("principal", sorted(PRINCIPALS))
def test_rest_cell(world, principal, verb):
    status, body = world.call(principal, verb)
    assert_cell(status, body, expected(principal, verb), verb)


def test_an_agent_forgets_its_own_memory_but_not_one_it_shares_with_another_teacher(world):
    """forget:own means every admission of the memory was this key's."""
    agent = world.keys["agent"]
    # The person teaches the same fact again: the memory now has two teachers.
    status, body = rest(
        world.keys["user"],
        "POST",
        "/v1/memories",
        {"label": "Taught by agent", "definition": "Taught by agent matters for the team.", "type": "fact"},
    )
    assert status == 200 and body["status"] == "merged" and body["memory_id"] == world.own["agent"], body
    status, body = rest(agent, "DELETE", f"/v1/memories/{world.own['agent']}")
    assert status == 403 and body["error"]["code"] == "forbidden"


def test_a_key_scoped_to_an_agent_writes_into_and_reads_only_its_scope(configured, tenant):
    scoped = container.keys().create(tenant, "scoped", principal="agent", scope=KeyScope(agent_id="bot-1"))
    other = container.keys().create(tenant, "other", principal="agent")
    rest(
        other,
        "POST",
        "/v1/memories",
        {"label": "Outside fact", "definition": "Outside fact matters to many.", "type": "fact"},
    )
    status, body = rest(
        scoped,
        "POST",
        "/v1/memories",
        {"label": "Inside fact", "definition": "Inside fact matters to bot one.", "type": "fact"},
    )
    assert status == 201
    assert container.memories().get(tenant, uuid.UUID(body["memory_id"])).agent_id == "bot-1"
    status, page = rest(scoped, "GET", "/v1/memories")
    assert status == 200 and [m["label"] for m in page["memories"]] == ["Inside fact"]
    status, body = rest(scoped, "POST", "/v1/search", {"query": "fact", "scope": {"agent_id": "bot-2"}})
    assert status == 403 and body["error"]["code"] == "forbidden"
    status, body = rest(
        scoped,
        "POST",
        "/v1/memories",
        {"label": "Elsewhere", "definition": "Written for another agent.", "type": "fact", "agent_id": "bot-2"},
    )
    assert status == 403


def test_unknown_verbs_on_a_key_are_refused_at_creation(configured, tenant):
    from contextos.errors import BadRequest

    with pytest.raises(BadRequest):
        container.keys().create(tenant, "bad", verbs=["read", "everything"])


# -- MCP: the verbs its tools need (read, write, forget) ------------------------------------------
MCP_CALLS = {
    "read": lambda w, p: ("search_memories", {"query": "release cadence"}),
    "write": lambda w, p: (
        "save_memory",
        {"label": "MCP fact", "definition": "A fact saved through MCP here.", "type": "fact"},
    ),
    "forget": lambda w, p: ("forget_memory", {"memory_id": w.person}),
    "forget:own": lambda w, p: ("forget_memory", {"memory_id": w.own[p]}),
}


@pytest.mark.parametrize("verb", sorted(MCP_CALLS))
@pytest.mark.parametrize("principal", sorted(PRINCIPALS))
def test_mcp_cell(world, principal, verb):
    from contextos.mcp.run import local_backend
    from contextos.mcp.server import build_server, key_identifier
    from mcp.client.client import Client

    caller = key_identifier(container.keys())(world.keys[principal])
    assert caller is not None
    server = build_server(local_backend(caller))
    tool, arguments = MCP_CALLS[verb](world, principal)

    async def run() -> tuple[bool, dict]:
        async with Client(server, raise_exceptions=False) as client:
            result = await client.call_tool(tool, arguments)
            return not result.is_error, (result.structured_content or {}).get("error", {})

    ok, error = asyncio.run(run())
    if expected(principal, verb):
        assert ok, error
    else:
        assert not ok and error.get("code") == "forbidden" and error.get("status") == 403, error


# -- CLI: its verbs against the local HTTP front ----------------------------------------------------
@pytest.fixture
def front(configured):
    from contextos.local.bridge import ApiBridge

    bridge = ApiBridge(port=0).start()
    yield bridge.url
    bridge.stop()


def cli_args(world: World, verb: str, principal: str, tmp: Path) -> list[str] | None:
    (tmp / "in" / "05-resources").mkdir(parents=True, exist_ok=True)
    (tmp / "in" / "05-resources" / "cli.md").write_text("---\nl0: CLI rule\ntype: fact\n---\nA rule from the CLI.\n")
    match verb:
        case "read":
            return ["search", "release cadence"]
        case "edit":
            return ["memories", "edit", world.person, "--definition", "Releases happen weekly now."]
        case "unlock":
            return ["memories", "edit", world.protected, "--definition", "The rule changed.", "--unlock"]
        case "forget":
            return ["memories", "forget", world.person]
        case "forget:own":
            return ["memories", "forget", world.own[principal]]
        case "export":
            return ["export", str(tmp / "out")]
        case "import":
            return ["import", str(tmp / "in")]
        case "erase":
            return ["erase", "user", "nobody-here"]
    return None


CLI_VERBS = ["read", "edit", "unlock", "forget", "forget:own", "export", "import", "erase"]


@pytest.mark.parametrize("verb", CLI_VERBS)
@pytest.mark.parametrize("principal", sorted(PRINCIPALS))
def test_cli_cell(world, front, principal, verb, tmp_path, capsys):
    from contextos.cli import main

    args = cli_args(world, verb, principal, tmp_path)
    assert args is not None
    code = main([*args, "--api", front, "--key", world.keys[principal]])
    err = capsys.readouterr().err
    if expected(principal, verb):
        assert code == 0, err
    else:
        assert code != 0 and "forbidden" in err, err


def test_every_verb_has_a_cell_on_rest():
    """The matrix above covers every verb the access module knows."""
    assert {v.value for v in Verb} == ALL_VERBS and len(ALL_VERBS) == 11
