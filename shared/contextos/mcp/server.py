"""ContextOS as an MCP server (mcp SDK 2.x ``MCPServer``): tools written for a model to use well,
memories as resources. Every tool failure has one shape: a tool error (``isError``) whose content
is ``{"error": {"code", "message", "status"[, "details"]}}`` with the HTTP API's stable code —
domain errors, arguments that do not match the schema and text the API refuses (a NUL) alike.

``build_server(backend)`` is transport-free; ``http_app(backend, keys)`` is the streamable HTTP
ASGI app (mount it at ``/mcp``), which takes the caller from an API key on every request.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal
from uuid import uuid4

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, Field, ValidationError

from contextos.mcp.backend import Backend, BackendError, Caller, current_caller

INSTRUCTIONS = """ContextOS is your long-term memory. Before answering anything that may depend on what \
you were told before (preferences, decisions, facts about people, projects or systems), call \
get_context with the user's question and use what it returns. When you learn something worth \
keeping, call save_memory with a short label and a one-sentence definition. Pass user_id (and \
agent_id/run_id when you have them) so each person's memories stay theirs."""

REMEMBER_WAIT_S = 60.0
REMEMBER_POLL_S = 0.5
AS_OF = "An ISO-8601 instant: answer from what was known then (history; nothing is reinforced)."
Clearable = Literal["tags", "metadata", "user_id", "agent_id", "run_id"]

MemoryKind = Literal[
    "fact", "decision", "preference", "problem", "entity", "event", "code", "rule", "skill", "task", "context"
]


def _scope(user_id: str | None, agent_id: str | None, run_id: str | None, tags: list[str] | None) -> dict | None:
    scope = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "tags": tags or []}
    return {k: v for k, v in scope.items() if v} or None


def _mcp_error(exc: BackendError) -> MCPError:
    code = INVALID_PARAMS if 400 <= exc.status < 500 else INTERNAL_ERROR
    data = {"code": exc.code, "message": exc.message, "status": exc.status}
    data |= {"details": exc.details} if exc.details else {}
    return MCPError(code=code, message=f"{exc.code}: {exc.message}", data=data)


def _nul_free(arguments: Any) -> None:
    """Refuse a NUL or a lone surrogate anywhere in the arguments (keys too), as the HTTP API's edge
    does (`invalid_character`): PostgreSQL cannot store them."""
    from contextos.errors import InvalidCharacter

    stack: list[tuple[list, Any]] = [(["arguments"], arguments)]
    while stack:
        loc, value = stack.pop()
        texts = [value] if isinstance(value, str) else list(value) if isinstance(value, dict) else []
        for text in texts:
            if isinstance(text, str) and (bad := _BAD_CHAR.search(text)):
                what = "a NUL character" if bad.group() == "\x00" else "a lone surrogate"
                raise BackendError(
                    InvalidCharacter.status,
                    InvalidCharacter.code,
                    f"{'.'.join(str(p) for p in loc)} contains {what}, which cannot be stored",
                    {"loc": loc, "position": bad.start()},
                )
        if isinstance(value, dict):
            stack.extend(([*loc, key], child) for key, child in value.items())
        elif isinstance(value, list):
            stack.extend(([*loc, i], child) for i, child in enumerate(value))


_BAD_CHAR = re.compile("[\x00\ud800-\udfff]")


def _tool_error(exc: BackendError) -> CallToolResult:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message, "status": exc.status}
    if exc.details:
        error["details"] = exc.details
    payload = {"error": error}
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload))], structured_content=payload, is_error=True
    )


def _schema_error(exc: ValidationError) -> BackendError:
    """Pydantic's complaint about the arguments, as the API's 422 (field and reason, never its prose)."""
    details = [{"loc": ["arguments", *e["loc"]], "msg": e["msg"], "type": e["type"]} for e in exc.errors()]
    fields = ", ".join(sorted({".".join(str(p) for p in d["loc"][1:]) or "arguments" for d in details}))
    return BackendError(422, "validation_error", f"the arguments do not match the tool's schema: {fields}", details)


class _ContextOSServer(MCPServer):
    """``MCPServer`` whose every tool failure comes back in the one error shape."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        try:
            _nul_free(arguments)
            return await super().call_tool(name, arguments, context)
        except BackendError as exc:
            return _tool_error(exc)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, BackendError):
                return _tool_error(cause)
            if isinstance(cause, ValidationError):
                return _tool_error(_schema_error(cause))
            if self._tool_manager.get_tool(name) is None:
                return _tool_error(BackendError(404, "unknown_tool", f"no tool named {name!r}"))
            from contextos.observability import logger

            logger.exception("mcp_tool_crashed", extra={"tool": name})
            return _tool_error(BackendError(500, "internal_error", "the tool failed; the server logged why"))


async def _run(fn: Callable[[], BaseModel]) -> dict[str, Any]:
    """A backend call off the event loop (the services are synchronous), as JSON-ready data."""
    caller = current_caller.get()

    def call() -> BaseModel:
        token = current_caller.set(caller)  # worker threads do not inherit the request's context
        try:
            return fn()
        finally:
            current_caller.reset(token)

    return (await anyio.to_thread.run_sync(call)).model_dump(mode="json")


def _instant(text: str) -> datetime:
    """An ISO-8601 instant (naive means UTC), or the API's 422."""
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError as exc:
        raise BackendError(422, "validation_error", f"{text!r} is not an ISO-8601 instant") from exc
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def _read(fn: Callable[[], BaseModel]) -> dict[str, Any]:
    """A resource read: a failure is a JSON-RPC error (resources have no error result) with the same
    ``{code, message, status}`` in its data."""
    try:
        return await _run(fn)
    except BackendError as exc:
        raise _mcp_error(exc) from exc


def build_server(backend: Backend) -> MCPServer:
    server = _ContextOSServer("contextos", instructions=INSTRUCTIONS, version="0.1.0")

    @server.tool()
    async def get_context(
        query: Annotated[str, Field(description="The user's question or the task at hand, in plain words.")],
        user_id: Annotated[str | None, Field(description="Only this user's memories.")] = None,
        agent_id: Annotated[str | None, Field(description="Only this agent's memories.")] = None,
        run_id: Annotated[str | None, Field(description="Only this run's memories.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories holding all these tags.")] = None,
        token_budget: Annotated[int | None, Field(ge=16, le=200_000, description="Tokens the block may use.")] = None,
        session_id: Annotated[str | None, Field(description="The conversation this question belongs to.")] = None,
        as_of: Annotated[str | None, Field(description=AS_OF)] = None,
    ) -> dict[str, Any]:
        """Recall what is known that bears on a question: a ranked, token-budgeted markdown block of
        relevant memories (strongest and most relevant first). Call it before answering anything that
        may depend on earlier conversations, documents, preferences or decisions. Recalled memories
        are reinforced, so what keeps being useful is remembered longer."""
        options: dict[str, Any] = {"scope": _scope(user_id, agent_id, run_id, tags), "token_budget": token_budget}
        options |= {"session_id": session_id, "as_of": as_of}
        result = await _run(lambda: backend.context(query, **{k: v for k, v in options.items() if v is not None}))
        return {
            "context": result["context"],
            "tokens_used": result["tokens_used"],
            "memories": [{"id": m["id"], "label": m["label"], "type": m["type"]} for m in result["memories"]],
        }

    @server.tool()
    async def save_memory(
        label: Annotated[str, Field(min_length=1, max_length=200, description="A short name: 'Deploy window'.")],
        definition: Annotated[
            str, Field(min_length=1, max_length=8000, description="One or two self-contained sentences.")
        ],
        type: Annotated[MemoryKind, Field(description="What kind of knowledge this is.")] = "fact",
        importance: Annotated[int, Field(ge=1, le=10, description="1 trivia … 10 must never be lost.")] = 5,
        user_id: Annotated[str | None, Field(description="The user this memory is about or belongs to.")] = None,
        agent_id: Annotated[str | None, Field(description="The agent that owns it.")] = None,
        run_id: Annotated[str | None, Field(description="The run or task it belongs to.")] = None,
        tags: Annotated[list[str] | None, Field(description="Free labels for filtering later.")] = None,
    ) -> dict[str, Any]:
        """Remember something worth keeping beyond this conversation: a fact, a decision, a preference,
        a rule. It is checked for trust and for contradictions with what is already known: a newer
        contradicting statement supersedes the older one, a restatement of a known memory joins it
        (status 'merged', with that memory's id), and low-trust text waits for a person's review
        (status 'held'). One idea per call; do not save the conversation itself."""
        fields: dict[str, Any] = {"type": type, "importance": importance, "user_id": user_id, "agent_id": agent_id}
        fields |= {"run_id": run_id, "tags": tags or []}
        return await _run(lambda: backend.add_memory(label, definition, **{k: v for k, v in fields.items() if v}))

    @server.tool()
    async def remember(
        text: Annotated[
            str,
            Field(
                min_length=1,
                description="What to remember, in plain words: a note, a decision, a few lines of conversation "
                "(as long as one turn of conversation may be; longer is refused with payload_too_large).",
            ),
        ],
        user_id: Annotated[str | None, Field(description="The user it is about or belongs to.")] = None,
        agent_id: Annotated[str | None, Field(description="The agent that owns it.")] = None,
        run_id: Annotated[str | None, Field(description="The run or task it belongs to.")] = None,
        tags: Annotated[list[str] | None, Field(description="Free labels for filtering later.")] = None,
        wait_s: Annotated[
            float, Field(ge=0, le=120, description="Seconds to wait for the outcome (0: just queue it).")
        ] = REMEMBER_WAIT_S,
    ) -> dict[str, Any]:
        """Remember free text: it is read like a turn of conversation — secrets redacted, the facts,
        decisions and preferences in it extracted, each checked for trust and for contradictions —
        and you get back what became of it: memories admitted (new), merged (the text restated a
        memory already known: the one it joined is named) and held for a person's review. Use it for
        anything longer than one fact; save_memory stores one fact exactly as you word it."""
        scope = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id, "tags": tags}
        fields: dict[str, Any] = {k: v for k, v in scope.items() if v}
        session_id = f"remember-{uuid4().hex}"
        await _run(lambda: backend.append_message(session_id, "user", text, **fields))
        await _run(lambda: backend.end_session(session_id))
        deadline = time.monotonic() + wait_s
        while True:
            session = await _run(lambda: backend.get_session(session_id))
            flushes = session["flushes"]
            if flushes and all(f["status"] in ("done", "failed") for f in flushes):
                break
            if time.monotonic() >= deadline:
                return {"status": "queued", "session_id": session_id, "admitted": [], "merged": [], "held": []}
            await anyio.sleep(REMEMBER_POLL_S)
        failed = [f["error"] for f in flushes if f["status"] == "failed"]
        taught = await _run(lambda: backend.session_memories(session_id))
        memory = ("id", "label", "type")
        return {
            "status": "failed" if failed else "done",
            "session_id": session_id,
            **({"reason": "; ".join(e or "unknown" for e in failed)} if failed else {}),
            "admitted": [
                {k: m[k] for k in memory} | ({"superseded": m["superseded"]} if m["superseded"] else {})
                for m in taught["memories"]
                if m["outcome"] == "admitted"
            ],
            "merged": [{k: m[k] for k in memory} for m in taught["memories"] if m["outcome"] == "merged"],
            "held": [{k: h[k] for k in ("review_id", "label", "reason")} for h in taught["held"]],
        }

    @server.tool()
    async def search_memories(
        query: Annotated[str, Field(description="What to look for.")],
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        user_id: Annotated[str | None, Field(description="Only this user's memories.")] = None,
        agent_id: Annotated[str | None, Field(description="Only this agent's memories.")] = None,
        run_id: Annotated[str | None, Field(description="Only this run's memories.")] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories holding all these tags.")] = None,
        as_of: Annotated[str | None, Field(description=AS_OF)] = None,
    ) -> dict[str, Any]:
        """Find memories matching a query, best first, with their ids and scores, without changing
        anything (no reinforcement). Use it to find a memory to inspect, correct or forget; use
        get_context to answer a question."""
        options = {"limit": limit, "scope": _scope(user_id, agent_id, run_id, tags), "as_of": as_of}
        result = await _run(lambda: backend.search(query, **{k: v for k, v in options.items() if v is not None}))
        return {
            "memories": [
                {
                    "id": m["id"],
                    "label": m["label"],
                    "definition": m["definition"],
                    "type": m["type"],
                    "band": m["band"],
                    "score": round(m["score"]["relevance"], 4),
                }
                for m in result["memories"]
            ]
        }

    @server.tool()
    async def forget_memory(
        memory_id: Annotated[str, Field(description="The id from search_memories or list_memories.")],
        reason: Annotated[str | None, Field(max_length=500, description="Why, for the audit log.")] = None,
    ) -> dict[str, Any]:
        """Forget one memory: it leaves every context, search and list at once, and the decision is
        audit-logged. Use it when the user asks you to forget something or a memory is wrong. A
        protected memory refuses (error code memory_protected)."""
        return await _run(lambda: backend.forget_memory(memory_id, reason=reason))

    @server.tool()
    async def log_session(
        session_id: Annotated[str, Field(min_length=1, max_length=200, description="A stable id per conversation.")],
        role: Annotated[Literal["user", "assistant", "tool", "system", "third_party"], Field()],
        content: Annotated[str, Field(min_length=1, description="The turn's text, verbatim.")],
        end: Annotated[
            bool, Field(description="True on the conversation's last turn: it is then learned from.")
        ] = False,
    ) -> dict[str, Any]:
        """Record one turn of the conversation. Turns are buffered and learned from later (in the
        background, and when the session ends), so you do not need to save_memory what was said."""
        appended = await _run(lambda: backend.append_message(session_id, role, content))
        if end:
            appended["session"] = await _run(lambda: backend.end_session(session_id))
        return appended

    @server.tool()
    async def get_skill(
        name: Annotated[str, Field(min_length=1, max_length=200, description="The skill's name, e.g. 'release'.")],
    ) -> dict[str, Any]:
        """Fetch a stored skill (a how-to: the steps for a recurring task) by name, with its full text.
        Error code not_found when no skill has that name: then search_memories may find a near one."""
        page = await _run(lambda: backend.list_memories(type="skill", state="active", prefix=name, limit=20))
        wanted = name.strip().lower()
        found = [m for m in page["memories"] if m["label"].strip().lower() == wanted] or page["memories"]
        if not found:
            raise BackendError(404, "not_found", f"no skill named {name!r}")
        return await _run(lambda: backend.get_memory(found[0]["id"]))

    @server.tool()
    async def list_memories(
        type: Annotated[MemoryKind | None, Field(description="Only this kind.")] = None,
        user_id: Annotated[str | None, Field(description="Only this user's memories.")] = None,
        agent_id: Annotated[str | None, Field()] = None,
        run_id: Annotated[str | None, Field()] = None,
        tags: Annotated[list[str] | None, Field(description="Only memories holding all these tags.")] = None,
        prefix: Annotated[str | None, Field(description="Labels starting with this.")] = None,
        limit: Annotated[int, Field(ge=1, le=100)] = 20,
        cursor: Annotated[str | None, Field(description="next_cursor of the previous page.")] = None,
    ) -> dict[str, Any]:
        """List stored memories, newest first, with filters; page on with next_cursor. For browsing
        and housekeeping; to answer a question use get_context."""
        filters: dict[str, Any] = {
            "type": type,
            "user_id": user_id,
            "agent_id": agent_id,
            "run_id": run_id,
            "prefix": prefix,
        }
        filters |= {"tags": tags or [], "limit": limit, "cursor": cursor}
        return await _run(lambda: backend.list_memories(**{k: v for k, v in filters.items() if v}))

    @server.tool()
    async def get_memory(
        memory_id: Annotated[str, Field(description="A memory id.")],
    ) -> dict[str, Any]:
        """One memory in full: its definition, strength and band now, trust, state, and every source
        (document or conversation) it was learned from."""
        return await _run(lambda: backend.get_memory(memory_id))

    @server.tool()
    async def edit_memory(
        memory_id: Annotated[str, Field(description="The id from search_memories or list_memories.")],
        label: Annotated[str | None, Field(min_length=1, max_length=200)] = None,
        definition: Annotated[str | None, Field(min_length=1, max_length=8000)] = None,
        type: Annotated[MemoryKind | None, Field()] = None,
        importance: Annotated[int | None, Field(ge=1, le=10)] = None,
        tags: Annotated[list[str] | None, Field(max_length=50, description="Replaces the tags.")] = None,
        user_id: Annotated[str | None, Field(min_length=1, max_length=200)] = None,
        agent_id: Annotated[str | None, Field(min_length=1, max_length=200)] = None,
        run_id: Annotated[str | None, Field(min_length=1, max_length=200)] = None,
        always_load: Annotated[bool | None, Field(description="Put it in every context block.")] = None,
        protected: Annotated[bool | None, Field(description="Refuse edits and forgetting until unlocked.")] = None,
        clear: Annotated[list[Clearable] | None, Field(description="Fields to empty (tags, metadata, scopes).")] = None,
        unlock: Annotated[bool, Field(description="Required to edit a protected memory.")] = False,
    ) -> dict[str, Any]:
        """Correct a memory in place: only the fields you pass change (PATCH); a new definition is
        re-embedded and the old text stays in memory_history. Use `clear` to empty tags or a scope.
        A protected memory refuses (memory_protected) unless unlock is true and your key may unlock."""
        given = {"label": label, "definition": definition, "type": type, "importance": importance, "tags": tags}
        given |= {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        given |= {"always_load": always_load, "protected": protected}
        changes: dict[str, Any] = {k: v for k, v in given.items() if v is not None}
        changes |= {field: None for field in clear or []} | ({"unlock": True} if unlock else {})
        if not changes or set(changes) == {"unlock"}:
            raise BackendError(422, "validation_error", "nothing to change: pass a field or `clear`")
        return await _run(lambda: backend.edit_memory(memory_id, **changes))

    @server.tool()
    async def restore_memory(
        memory_id: Annotated[str, Field(description="A forgotten or superseded memory's id.")],
        mode: Annotated[
            Literal["current", "both"],
            Field(
                description="For a superseded memory: `current` makes it the current version again (its"
                " successor is superseded by it); `both` keeps both, linked as a conflict."
            ),
        ] = "current",
    ) -> dict[str, Any]:
        """Bring back a memory that was forgotten or superseded by mistake. A superseded one either
        becomes the current version again or stands beside its successor as a recorded conflict;
        never two silent current versions. Audit-logged like every change."""
        return await _run(lambda: backend.restore_memory(memory_id, mode))

    @server.tool()
    async def memory_history(
        memory_id: Annotated[str, Field(description="A memory id.")],
        as_of: Annotated[str | None, Field(description="An ISO-8601 instant: only what was recorded by then.")] = None,
    ) -> dict[str, Any]:
        """How a memory came to be what it is: its versions (the supersession chain, oldest first,
        with when each was valid) and its audit trail. With as_of, only what existed at that instant."""
        history = await _run(lambda: backend.memory_history(memory_id))
        if as_of is None:
            return history
        instant = _instant(as_of)
        history["versions"] = [v for v in history["versions"] if _instant(v["recorded_at"]) <= instant]
        history["events"] = [e for e in history["events"] if _instant(e["at"]) <= instant]
        return history

    @server.tool()
    async def forget_document(
        document_id: Annotated[str, Field(description="The document's id (from its upload or a memory's sources).")],
    ) -> dict[str, Any]:
        """Forget a document and everything only it taught: memories other sources also hold are
        kept (minus this document's evidence); raw copies are removed. Returns the counts."""
        return await _run(lambda: backend.forget_document(document_id))

    @server.resource("contextos://memories/{memory_id}", mime_type="application/json")
    async def memory_resource(memory_id: str) -> str:
        """One memory, as JSON."""
        return json.dumps(await _read(lambda: backend.get_memory(memory_id)))

    @server.resource("contextos://memories", mime_type="application/json")
    async def recent_memories() -> str:
        """The 50 newest memories, as JSON."""
        return json.dumps(await _read(lambda: backend.list_memories(limit=50)))

    return server


def http_app(backend: Backend, identify: Callable[[str], Caller | None], *, path: str = "/mcp") -> Any:
    """The streamable HTTP transport as an ASGI app. Every request must carry an API key
    (``x-api-key`` or ``Authorization: Bearer``); ``identify`` turns it into the caller, and the
    tools then act for that caller's tenant only."""
    from contextos.auth import presented_key

    inner = build_server(backend).streamable_http_app(
        streamable_http_path=path, stateless_http=True, json_response=True
    )

    async def app(scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await inner(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        key = presented_key(headers)
        caller = await anyio.to_thread.run_sync(identify, key) if key else None
        if caller is None:
            body = json.dumps({"error": {"code": "unauthorized", "message": "a valid API key is required"}}).encode()
            await send(
                {"type": "http.response.start", "status": 401, "headers": [(b"content-type", b"application/json")]}
            )
            await send({"type": "http.response.body", "body": body})
            return
        token = current_caller.set(caller)
        try:
            await inner(scope, receive, send)
        finally:
            current_caller.reset(token)

    return app


def key_identifier(keys: Any) -> Callable[[str], Caller | None]:
    """A presented key → the caller, through the same key store the API's authorizer uses."""
    from contextos.models import Provenance

    def identify(key: str) -> Caller | None:
        identity = keys.identify(key)
        if identity is None:
            return None
        return Caller(
            tenant_id=identity.tenant_id,
            subject=identity.name,
            ceiling=Provenance(identity.provenance_ceiling),
            api_key=key,
            kind=identity.principal,
            verbs=frozenset(identity.verbs) if identity.verbs is not None else None,
            scope=identity.scope,
        )

    return identify
