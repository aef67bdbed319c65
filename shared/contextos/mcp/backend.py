"""What the MCP tools call: one `Backend` shape, served by the in-process services (the local store)
or by a deployed API through the SDK. Both raise `BackendError` with the API's stable code."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, cast
from uuid import UUID

from pydantic import BaseModel, ValidationError

from contextos.access import KeyScope, Principal, Verb
from contextos.management_models import RestoreMode
from contextos.models import Provenance

if TYPE_CHECKING:
    from contextos.services.conversations import ConversationService


class BackendError(Exception):
    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.details = status, code, message, details


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is calling, as the credential says: never from a tool's arguments."""

    tenant_id: str
    subject: str
    ceiling: Provenance = Provenance.agent_turn
    api_key: str | None = None  # passed on to a deployed API
    kind: str = "agent"
    verbs: frozenset[str] | None = None  # None: the kind's defaults (contextos.access)
    scope: KeyScope = field(default_factory=KeyScope)

    def principal(self) -> Principal:
        return Principal(
            tenant_id=self.tenant_id,
            kind=self.kind,
            subject=self.subject,
            provenance_ceiling=self.ceiling,
            verbs=self.verbs,
            scope=self.scope,
        )


# The HTTP transport sets the caller per request (from its API key); stdio has one caller.
current_caller: ContextVar[Caller | None] = ContextVar("contextos_mcp_caller", default=None)


class Backend(Protocol):
    def context(self, query: str, **options: Any) -> BaseModel: ...
    def search(self, query: str, **options: Any) -> BaseModel: ...
    def add_memory(self, label: str, definition: str, **fields: Any) -> BaseModel: ...
    def forget_memory(self, memory_id: str, *, reason: str | None = None) -> BaseModel: ...
    def append_message(self, session_id: str, role: str, content: str, **fields: Any) -> BaseModel: ...
    def end_session(self, session_id: str) -> BaseModel: ...
    def get_session(self, session_id: str) -> BaseModel: ...
    def session_memories(self, session_id: str) -> BaseModel: ...
    def list_memories(self, **filters: Any) -> BaseModel: ...
    def get_memory(self, memory_id: str) -> BaseModel: ...
    def edit_memory(self, memory_id: str, **changes: Any) -> BaseModel: ...
    def restore_memory(self, memory_id: str, mode: str = "current") -> BaseModel: ...
    def memory_history(self, memory_id: str) -> BaseModel: ...
    def forget_document(self, document_id: str) -> BaseModel: ...


class LocalBackend:
    """The in-process services on this machine's store (what ``contextos dev`` serves)."""

    def __init__(self, caller: Callable[[], Caller]) -> None:
        self._caller = caller
        self._here: ConversationService | None = None

    def _call(self, verb: Verb, fn: Callable[[Caller], BaseModel]) -> BaseModel:
        """Every tool through the permission matrix (`contextos.access`), as the API's routes are."""
        from contextos.access import authorize
        from contextos.errors import ContextOSError

        try:
            caller = self._caller()
            authorize(caller.principal(), verb)
            return fn(caller)
        except ContextOSError as exc:
            raise BackendError(exc.status, exc.code, exc.message, exc.details or None) from exc
        except ValidationError as exc:
            details = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
            raise BackendError(422, "validation_error", "the arguments do not match the schema", details) from exc

    def context(self, query: str, **options: Any) -> BaseModel:
        from contextos import container
        from contextos.models import ContextRequest

        return self._call(
            Verb.read,
            lambda c: container.retrieval().context(c.tenant_id, _confined(c, ContextRequest(query=query, **options))),
        )

    def search(self, query: str, **options: Any) -> BaseModel:
        from contextos import container
        from contextos.models import SearchRequest

        return self._call(
            Verb.read,
            lambda c: container.retrieval().search(c.tenant_id, _confined(c, SearchRequest(query=query, **options))),
        )

    def add_memory(self, label: str, definition: str, **fields: Any) -> BaseModel:
        from contextos import container
        from contextos.governance_models import MemoryCreate

        def run(c: Caller) -> BaseModel:
            request = MemoryCreate(label=label, definition=definition, **fields)
            if not c.scope.empty:
                request = request.model_copy(update=c.scope.stamp(request.user_id, request.agent_id, request.tags))
            return container.governance().create_memory(c.tenant_id, request, actor=c.subject, ceiling=c.ceiling)

        return self._call(Verb.write, run)

    def forget_memory(self, memory_id: str, *, reason: str | None = None) -> BaseModel:
        from contextos import container

        return self._call(
            Verb.forget,
            lambda c: container.memories().forget(
                c.tenant_id,
                _uuid(memory_id),
                actor=c.subject,
                reason=reason,
                only_own=c.principal().forgets_only_own(),
            ),
        )

    def append_message(self, session_id: str, role: str, content: str, **fields: Any) -> BaseModel:
        from contextos.conversations import MessageCreate

        def run(c: Caller) -> BaseModel:
            message = MessageCreate.model_validate({"role": role, "content": content, **fields})
            if not c.scope.empty:
                message = message.model_copy(update=c.scope.stamp(message.user_id, message.agent_id, message.tags))
            return self._conversations().append(c.tenant_id, c.ceiling, session_id, message)

        return self._call(Verb.write, run)

    def end_session(self, session_id: str) -> BaseModel:
        return self._call(Verb.write, lambda c: self._conversations().end(c.tenant_id, session_id))

    def get_session(self, session_id: str) -> BaseModel:
        return self._call(Verb.read, lambda c: self._conversations().get(c.tenant_id, session_id))

    def session_memories(self, session_id: str) -> BaseModel:
        return self._call(Verb.read, lambda c: self._conversations().taught(c.tenant_id, session_id))

    def _conversations(self) -> ConversationService:
        """The conversation service; with no conversation queue configured (stdio on this machine's
        store, nothing polling a queue), a flush is distilled here, when it is claimed."""
        from contextos import container

        service = container.conversations()
        if service.queue is not None:
            return service
        if self._here is None or self._here.store is not service.store:
            queue = DistilHere()
            self._here = queue.service = replace(service, queue=queue)
        return self._here

    def list_memories(self, **filters: Any) -> BaseModel:
        from contextos import container
        from contextos.management_models import MemoryListQuery

        def run(c: Caller) -> BaseModel:
            query = MemoryListQuery(**filters)
            if not c.scope.empty and (confined := c.scope.confine(query)) is not None:
                query = query.model_copy(update=confined.model_dump(include={"user_id", "agent_id", "tags"}))
            return container.memories().list(c.tenant_id, query)

        return self._call(Verb.read, run)

    def get_memory(self, memory_id: str) -> BaseModel:
        from contextos import container

        return self._call(Verb.read, lambda c: container.memories().get(c.tenant_id, _uuid(memory_id)))

    def edit_memory(self, memory_id: str, **changes: Any) -> BaseModel:
        """``PATCH /v1/memories/{id}``: the route's verbs (edit, and unlock for a protected memory)."""
        from contextos import container
        from contextos.access import authorize
        from contextos.management_models import MemoryPatch

        def run(c: Caller) -> BaseModel:
            patch = MemoryPatch.model_validate(changes)
            if patch.unlock:
                authorize(c.principal(), Verb.unlock)
            return container.memories().edit(c.tenant_id, _uuid(memory_id), patch, actor=c.subject)

        return self._call(Verb.edit, run)

    def restore_memory(self, memory_id: str, mode: str = "current") -> BaseModel:
        from contextos import container

        chosen = _restore_mode(mode)
        return self._call(
            Verb.edit,
            lambda c: container.memories().restore(c.tenant_id, _uuid(memory_id), actor=c.subject, mode=chosen),
        )

    def memory_history(self, memory_id: str) -> BaseModel:
        from contextos import container

        return self._call(Verb.read, lambda c: container.governance().history(c.tenant_id, _uuid(memory_id)))

    def forget_document(self, document_id: str) -> BaseModel:
        from contextos import container

        return self._call(
            Verb.forget_document,
            lambda c: container.memories().forget_document(c.tenant_id, _uuid(document_id), actor=c.subject),
        )


class DistilHere:
    """A conversation queue that distils each flush as it is sent, in this process: what an
    in-process server without a queue (and without a worker polling one) needs for a session's
    end to be learned from at all."""

    service: ConversationService | None = None

    def send(self, message: dict) -> str:
        from contextos.conversations import FlushJob

        assert self.service is not None
        job = FlushJob.model_validate(message)
        self.service.handle_message(job)
        return f"here:{job.session_id}:{job.message_from}"


def _confined(caller: Caller, request: Any) -> Any:
    """A read request narrowed to the caller's key scope."""
    if caller.scope.empty:
        return request
    return request.model_copy(update={"scope": caller.scope.confine(request.scope)})


class ApiBackend:
    """A deployed (or the local) HTTP API through the SDK, with a fixed key or the caller's own."""

    def __init__(self, base_url: str, api_key: str | None = None) -> None:
        self.base_url = base_url
        self.api_key = api_key
        self._clients: dict[str | None, Any] = {}

    def _client(self) -> Any:
        from contextos.sdk import Client

        caller = current_caller.get()
        key = self.api_key or (caller.api_key if caller else None)
        if key not in self._clients:
            self._clients[key] = Client(self.base_url, api_key=key)
        return self._clients[key]

    def _call(self, name: str, *args: Any, **kwargs: Any) -> BaseModel:
        from contextos.sdk import ApiError

        try:
            return getattr(self._client(), name)(*args, **kwargs)
        except ApiError as exc:
            raise BackendError(exc.status, exc.code, exc.message, exc.details) from exc

    def context(self, query: str, **options: Any) -> BaseModel:
        return self._call("context", query, **options)

    def search(self, query: str, **options: Any) -> BaseModel:
        return self._call("search", query, **options)

    def add_memory(self, label: str, definition: str, **fields: Any) -> BaseModel:
        return self._call("add_memory", label, definition, **fields)

    def forget_memory(self, memory_id: str, *, reason: str | None = None) -> BaseModel:
        return self._call("forget_memory", memory_id, reason=reason)

    def append_message(self, session_id: str, role: str, content: str, **fields: Any) -> BaseModel:
        return self._call("append_message", session_id, role, content, **fields)

    def end_session(self, session_id: str) -> BaseModel:
        return self._call("end_session", session_id)

    def get_session(self, session_id: str) -> BaseModel:
        return self._call("get_session", session_id)

    def session_memories(self, session_id: str) -> BaseModel:
        return self._call("session_memories", session_id)

    def list_memories(self, **filters: Any) -> BaseModel:
        return self._call("list_memories", **filters)

    def get_memory(self, memory_id: str) -> BaseModel:
        return self._call("get_memory", memory_id)

    def edit_memory(self, memory_id: str, **changes: Any) -> BaseModel:
        return self._call("edit_memory", memory_id, **changes)

    def restore_memory(self, memory_id: str, mode: str = "current") -> BaseModel:
        return self._call("restore_memory", memory_id, mode)

    def memory_history(self, memory_id: str) -> BaseModel:
        return self._call("memory_history", memory_id)

    def forget_document(self, document_id: str) -> BaseModel:
        return self._call("forget_document", document_id)


def _restore_mode(value: str) -> RestoreMode:
    if value not in ("current", "both"):
        raise BackendError(422, "validation_error", f"mode must be current or both, not {value!r}")
    return cast(RestoreMode, value)


def _uuid(value: str) -> UUID:
    try:
        return UUID(str(value))
    except ValueError as exc:
        raise BackendError(422, "validation_error", f"{value!r} is not a memory id") from exc
