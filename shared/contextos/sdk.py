"""The Python SDK (S11): ``contextos.Client`` and ``contextos.AsyncClient`` over httpx, typed with
the API's own models, cursor iterators, retries with backoff on 429 and 5xx, and errors raised as
`ApiError` carrying the API's stable code.

    from contextos import Client

    with Client("http://127.0.0.1:8787", api_key="ctx_local_dev_key") as ctx:
        ctx.add_memory("Deploy window", "Deploys happen on Tuesday mornings.", user_id="ana")
        print(ctx.context("when do we deploy?", scope={"user_id": "ana"}).context)

Imports only httpx and the pure model modules: no database driver, no AWS SDK.
"""

from __future__ import annotations

import asyncio
import base64
import random
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import httpx
from pydantic import BaseModel

from contextos.conversations import MessageAppended, SessionListItem, SessionMemories, SessionPage, SessionView
from contextos.governance_models import AuditPage, MemoryAdmission, MemoryHistory, ReviewOutcome, ReviewPage
from contextos.management_models import (
    DocumentForgotten,
    DocumentListItem,
    DocumentPage,
    MemoryEdited,
    MemoryForgotten,
    MemoryGraph,
    MemoryListItem,
    MemoryPage,
    MemoryRestored,
    RestoreMode,
    UploadTicket,
)
from contextos.models import (
    ContextResult,
    DocumentAccepted,
    DocumentMemories,
    DocumentRecord,
    MemoryDetail,
    ReminderAcknowledged,
    ReminderPage,
    SearchResult,
)
from contextos.reports import GovernanceReport, HealthReport
from contextos.workspace.model import ImportReport, SyncReport

M = TypeVar("M", bound=BaseModel)
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})


class ApiError(Exception):
    """An error answer of the ContextOS API: ``code`` is stable (``not_found``, ``memory_protected``…)."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details


def _error(response: httpx.Response) -> ApiError:
    try:
        error = response.json().get("error") or {}
    except ValueError:
        error = {}
    return ApiError(
        response.status_code,
        str(error.get("code") or f"http_{response.status_code}"),
        str(error.get("message") or response.reason_phrase),
        error.get("details"),
    )


def _delay(attempt: int, response: httpx.Response | None, backoff_s: float) -> float:
    """Retry-After when the server gives one, else exponential backoff with full jitter."""
    if response is not None and (after := response.headers.get("retry-after")):
        try:
            return min(float(after), 30.0)
        except ValueError:
            pass
    return random.uniform(0, backoff_s * (2**attempt))


def _retry_wait(attempt: int, max_retries: int, backoff_s: float, response: httpx.Response | None) -> float | None:
    """How long to wait before retrying an attempt that got ``response`` (None: the connection
    failed); None when it is final: the last attempt, or a status not worth retrying."""
    if attempt >= max_retries or (response is not None and response.status_code not in RETRY_STATUSES):
        return None
    return _delay(attempt, response, backoff_s)


def _decoded(response: httpx.Response) -> Any:
    """The decoded JSON body of a final response, or the `ApiError` it carries."""
    if response.is_error:
        raise _error(response)
    if not response.content:
        return None
    if "json" not in response.headers.get("content-type", "application/json"):
        return response.content  # an archive (``export``): the bytes as they came
    return response.json()


DOCUMENT_SETTLED = frozenset({"done", "failed"})


def _settled(
    document_id: UUID | str, current: DocumentRecord | ApiError, deadline: float, timeout_s: float
) -> DocumentRecord | None:
    """The record once settled, None while pending; an upload's document is ``not_found`` until the
    bytes land, which counts as pending. ``TimeoutError`` past the deadline."""
    if isinstance(current, ApiError):
        if current.code != "not_found":
            raise current
        state = "not created yet"
    elif current.status in DOCUMENT_SETTLED:
        return current
    else:
        state = current.status
    if time.monotonic() >= deadline:
        raise TimeoutError(f"document {document_id} is still {state} after {timeout_s} s")
    return None


def _workspace_files(files: Mapping[str, str | bytes] | str | Path) -> list[dict[str, str]]:
    """A folder's markdown files (hidden ones skipped, as the CLI does), or path → text/bytes, as the
    API's workspace files; bytes go as base64, so the server judges them (``not_utf8``) as they are."""
    if isinstance(files, str | Path):
        folder = Path(files)
        if not folder.is_dir():
            raise FileNotFoundError(f"no such folder: {folder}")
        files = {
            p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*.md"))
            if not any(part.startswith(".") for part in p.relative_to(folder).parts)
        }
    return [
        {"path": path, "content": content}
        if isinstance(content, str)
        else {"path": path, "content": base64.b64encode(content).decode(), "encoding": "base64"}
        for path, content in files.items()
    ]


def _connection(base_url: str, api_key: str | None, timeout_s: float) -> dict[str, Any]:
    """The httpx client settings both clients share."""
    headers = {"x-api-key": api_key} if api_key else {}
    return {"base_url": base_url.rstrip("/"), "headers": headers, "timeout": timeout_s}


def _clean(params: dict[str, Any]) -> dict[str, Any]:
    """Query parameters without the unset ones; lists stay lists (repeated keys)."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if value is None or value == []:
            continue
        out[key] = [str(v) for v in value] if isinstance(value, list | tuple) else str(value)
    return out


def _memory_filters(filters: dict[str, Any]) -> dict[str, Any]:
    tags = filters.pop("tags", None)
    metadata = filters.pop("metadata", None) or {}
    params = dict(filters)
    if tags:
        params["tag"] = list(tags)
    if metadata:
        params["metadata"] = [f"{k}={v if isinstance(v, str) else str(v).lower()}" for k, v in metadata.items()]
    return _clean(params)


class Client:
    """A synchronous client of the ContextOS API."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 0.25,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(**_connection(base_url, api_key, timeout_s), transport=transport)
        self.max_retries = max_retries
        self.backoff_s = backoff_s

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- the wire ----------------------------------------------------------------------------
    def request(self, method: str, path: str, *, params: dict | None = None, json: Any = None) -> Any:
        """One API call with retries on 429/5xx and connection failures; the decoded JSON body."""
        for attempt in range(self.max_retries + 1):
            try:
                response = self._http.request(method, path, params=params, json=json)
            except httpx.TransportError:
                if (wait := _retry_wait(attempt, self.max_retries, self.backoff_s, None)) is None:
                    raise
                time.sleep(wait)
                continue
            if (wait := _retry_wait(attempt, self.max_retries, self.backoff_s, response)) is None:
                return _decoded(response)
            time.sleep(wait)
        raise AssertionError("unreachable")

    def _get(self, model: type[M], method: str, path: str, *, params: dict | None = None, json: Any = None) -> M:
        return model.model_validate(self.request(method, path, params=params, json=json))

    def _pages(self, fetch: Callable[[str | None], Any], items: str) -> Iterator[Any]:
        cursor: str | None = None
        while True:
            page = fetch(cursor)
            yield from getattr(page, items)
            cursor = page.next_cursor
            if not cursor:
                return

    # -- context and search ------------------------------------------------------------------
    def context(self, query: str, **options: Any) -> ContextResult:
        """``POST /v1/context``: options as the API's ContextRequest (scope, token_budget, dry_run…)."""
        return self._get(ContextResult, "POST", "/v1/context", json={"query": query, **options})

    def search(self, query: str, **options: Any) -> SearchResult:
        return self._get(SearchResult, "POST", "/v1/search", json={"query": query, **options})

    # -- memories ----------------------------------------------------------------------------
    def add_memory(self, label: str, definition: str, **fields: Any) -> MemoryAdmission:
        """``POST /v1/memories``: type, importance, provenance, user_id, agent_id, run_id, tags, metadata."""
        return self._get(
            MemoryAdmission, "POST", "/v1/memories", json={"label": label, "definition": definition, **fields}
        )

    def get_memory(self, memory_id: UUID | str) -> MemoryDetail:
        return self._get(MemoryDetail, "GET", f"/v1/memories/{memory_id}")

    def list_memories(self, *, cursor: str | None = None, limit: int = 50, **filters: Any) -> MemoryPage:
        """Filters: band, type, state, tier, user_id, agent_id, run_id, tags, metadata, prefix."""
        params = _memory_filters(filters | {"cursor": cursor, "limit": limit})
        return self._get(MemoryPage, "GET", "/v1/memories", params=params)

    def iter_memories(self, **filters: Any) -> Iterator[MemoryListItem]:
        return self._pages(lambda c: self.list_memories(cursor=c, **filters), "memories")

    def edit_memory(self, memory_id: UUID | str, **changes: Any) -> MemoryEdited:
        """``PATCH``: label, definition, importance, type, tags, metadata, always_load, protected, unlock."""
        return self._get(MemoryEdited, "PATCH", f"/v1/memories/{memory_id}", json=changes)

    def forget_memory(self, memory_id: UUID | str, *, reason: str | None = None) -> MemoryForgotten:
        return self._get(MemoryForgotten, "DELETE", f"/v1/memories/{memory_id}", params=_clean({"reason": reason}))

    def restore_memory(self, memory_id: UUID | str, mode: RestoreMode = "current") -> MemoryRestored:
        """Undo a forget or a supersession; a superseded memory comes back as the current version
        (``current``, its successor superseded by it) or beside it as a conflict (``both``)."""
        return self._get(MemoryRestored, "POST", f"/v1/memories/{memory_id}/restore", params={"mode": mode})

    def memory_history(self, memory_id: UUID | str) -> MemoryHistory:
        return self._get(MemoryHistory, "GET", f"/v1/memories/{memory_id}/history")

    def memory_graph(self, memory_id: UUID | str, *, hops: int = 2, limit: int = 200) -> MemoryGraph:
        return self._get(MemoryGraph, "GET", f"/v1/memories/{memory_id}/graph", params={"hops": hops, "limit": limit})

    def graph(self, *, limit: int = 300, **scope: Any) -> MemoryGraph:
        return self._get(MemoryGraph, "GET", "/v1/graph", params=_clean({"limit": limit, **scope}))

    # -- documents ---------------------------------------------------------------------------
    def add_document(
        self, text: str | None = None, *, data: bytes | None = None, filename: str | None = None, **fields: Any
    ) -> DocumentAccepted:
        """Text, or bytes (sent base64) with a filename; provenance and metadata as the API takes them."""
        body: dict[str, Any] = {"filename": filename, **fields}
        if data is not None:
            body["content_base64"] = base64.b64encode(data).decode()
        else:
            body["text"] = text
        return self._get(
            DocumentAccepted, "POST", "/v1/documents", json={k: v for k, v in body.items() if v is not None}
        )

    def get_document(self, document_id: UUID | str) -> DocumentRecord:
        return self._get(DocumentRecord, "GET", f"/v1/documents/{document_id}")

    def wait_for_document(
        self, document_id: UUID | str, *, timeout_s: float = 120.0, poll_s: float = 0.5
    ) -> DocumentRecord:
        """The document once ingestion settled it (``done`` or ``failed``: check ``status``); raises
        ``TimeoutError`` if it has not within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                current: DocumentRecord | ApiError = self.get_document(document_id)
            except ApiError as error:
                current = error
            record = _settled(document_id, current, deadline, timeout_s)
            if record is not None:
                return record
            time.sleep(poll_s)

    def document_memories(self, document_id: UUID | str) -> DocumentMemories:
        return self._get(DocumentMemories, "GET", f"/v1/documents/{document_id}/memories")

    def list_documents(
        self, *, status: str | None = None, cursor: str | None = None, limit: int = 50, user_id: str | None = None
    ) -> DocumentPage:
        params = _clean({"status": status, "cursor": cursor, "limit": limit, "user_id": user_id})
        return self._get(DocumentPage, "GET", "/v1/documents", params=params)

    def iter_documents(self, **filters: Any) -> Iterator[DocumentListItem]:
        return self._pages(lambda c: self.list_documents(cursor=c, **filters), "documents")

    def forget_document(self, document_id: UUID | str) -> DocumentForgotten:
        return self._get(DocumentForgotten, "DELETE", f"/v1/documents/{document_id}")

    def upload_url(self, filename: str, *, content_type: str | None = None) -> UploadTicket:
        body = {"filename": filename} | ({"content_type": content_type} if content_type else {})
        return self._get(UploadTicket, "POST", "/v1/uploads", json=body)

    def upload_file(self, path: str | Path, *, content_type: str | None = None) -> UploadTicket:
        """Ask for a presigned URL and PUT the file there; ingestion starts when it lands."""
        path = Path(path)
        ticket = self.upload_url(path.name, content_type=content_type)
        response = httpx.put(ticket.url, content=path.read_bytes(), headers=ticket.headers, timeout=300)
        if response.is_error:
            raise ApiError(response.status_code, "upload_failed", "the storage service refused the upload")
        return ticket

    # -- the markdown workspace --------------------------------------------------------------
    def export(self, *, format: str = "tar") -> bytes:
        """``GET /v1/export``: the workspace as tar.gz (or ``zip``) bytes (up to 5 MB; `contextos
        export DIR` streams bigger ones)."""
        return self.request("GET", "/v1/export", params={"format": format})

    def import_(
        self,
        files: Mapping[str, str | bytes] | str | Path,
        *,
        unlock: Iterable[UUID | str] = (),
        restore: bool = False,
    ) -> ImportReport:
        """``POST /v1/import``: a folder (its ``*.md``) or path → content; a report line per file."""
        body = {"files": _workspace_files(files), "unlock": [str(u) for u in unlock], "restore": restore}
        return self._get(ImportReport, "POST", "/v1/import", json=body)

    def sync(
        self,
        files: Mapping[str, str | bytes] | str | Path,
        *,
        deleted: Iterable[UUID | str] = (),
        prune: bool = False,
        unlock: Iterable[UUID | str] = (),
    ) -> SyncReport:
        """``POST /v1/workspace/sync``: the report, with the files to write and remove (nothing is
        written here: `contextos workspace sync DIR` applies it to a folder). ``deleted``: ids whose
        files you deleted — not written back; ``prune`` forgets them."""
        body = {
            "files": _workspace_files(files),
            "unlock": [str(u) for u in unlock],
            "deleted": [str(d) for d in deleted],
            "prune": prune,
        }
        return self._get(SyncReport, "POST", "/v1/workspace/sync", json=body)

    # -- sessions ----------------------------------------------------------------------------
    def append_message(self, session_id: str, role: str, content: str, **fields: Any) -> MessageAppended:
        body = {"role": role, "content": content, **fields}
        return self._get(MessageAppended, "POST", f"/v1/sessions/{session_id}/messages", json=body)

    def get_session(self, session_id: str) -> SessionView:
        return self._get(SessionView, "GET", f"/v1/sessions/{session_id}")

    def end_session(self, session_id: str) -> SessionView:
        return self._get(SessionView, "POST", f"/v1/sessions/{session_id}/end")

    def session_memories(self, session_id: str) -> SessionMemories:
        """What a session taught: the memories its flushes created or merged into, and what they held."""
        return self._get(SessionMemories, "GET", f"/v1/sessions/{session_id}/memories")

    def list_sessions(self, *, status: str | None = None, cursor: str | None = None, limit: int = 50) -> SessionPage:
        params = _clean({"status": status, "cursor": cursor, "limit": limit})
        return self._get(SessionPage, "GET", "/v1/sessions", params=params)

    def iter_sessions(self, **filters: Any) -> Iterator[SessionListItem]:
        return self._pages(lambda c: self.list_sessions(cursor=c, **filters), "sessions")

    # -- governance --------------------------------------------------------------------------
    def review(self, *, status: str = "pending", cursor: str | None = None) -> ReviewPage:
        return self._get(ReviewPage, "GET", "/v1/review", params=_clean({"status": status, "cursor": cursor}))

    def promote(self, review_id: UUID | str, *, reason: str) -> ReviewOutcome:
        return self._get(ReviewOutcome, "POST", f"/v1/review/{review_id}/promote", json={"reason": reason})

    def reject(self, review_id: UUID | str, *, reason: str) -> ReviewOutcome:
        return self._get(ReviewOutcome, "POST", f"/v1/review/{review_id}/reject", json={"reason": reason})

    def audit(self, *, cursor: str | None = None, memory_id: UUID | str | None = None) -> AuditPage:
        return self._get(AuditPage, "GET", "/v1/audit", params=_clean({"cursor": cursor, "memory_id": memory_id}))

    def reminders(self, *, include_acknowledged: bool = False, cursor: str | None = None) -> ReminderPage:
        params = _clean({"include_acknowledged": str(include_acknowledged).lower(), "cursor": cursor})
        return self._get(ReminderPage, "GET", "/v1/reminders", params=params)

    def acknowledge_reminder(self, reminder_id: UUID | str) -> ReminderAcknowledged:
        return self._get(ReminderAcknowledged, "POST", f"/v1/reminders/{reminder_id}/acknowledge")

    def health(self) -> HealthReport:
        return self._get(HealthReport, "GET", "/v1/health")

    def governance(self) -> GovernanceReport:
        return self._get(GovernanceReport, "GET", "/v1/governance")


class AsyncClient:
    """The same API with ``await``: each method of `Client` as a coroutine (iterators are async)."""

    def __init__(
        self,
        base_url: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        max_retries: int = 3,
        backoff_s: float = 0.25,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(**_connection(base_url, api_key, timeout_s), transport=transport)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        # The routes are described once, by the sync client: it builds each call without sending it.
        self._routes = _Recorder()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def request(self, method: str, path: str, *, params: dict | None = None, json: Any = None) -> Any:
        for attempt in range(self.max_retries + 1):
            try:
                response = await self._http.request(method, path, params=params, json=json)
            except httpx.TransportError:
                if (wait := _retry_wait(attempt, self.max_retries, self.backoff_s, None)) is None:
                    raise
                await asyncio.sleep(wait)
                continue
            if (wait := _retry_wait(attempt, self.max_retries, self.backoff_s, response)) is None:
                return _decoded(response)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")

    async def wait_for_document(
        self, document_id: UUID | str, *, timeout_s: float = 120.0, poll_s: float = 0.5
    ) -> DocumentRecord:
        """As `Client.wait_for_document`, polling with ``asyncio.sleep``."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                current: DocumentRecord | ApiError = await self.get_document(document_id)
            except ApiError as error:
                current = error
            record = _settled(document_id, current, deadline, timeout_s)
            if record is not None:
                return record
            await asyncio.sleep(poll_s)

    async def upload_file(self, path: str | Path, *, content_type: str | None = None) -> UploadTicket:
        """As `Client.upload_file`: a presigned URL, then the bytes PUT there without blocking the loop."""
        path = Path(path)
        ticket = await self.upload_url(path.name, content_type=content_type)
        data = await asyncio.to_thread(path.read_bytes)
        async with httpx.AsyncClient(timeout=300) as storage:
            response = await storage.put(ticket.url, content=data, headers=ticket.headers)
        if response.is_error:
            raise ApiError(response.status_code, "upload_failed", "the storage service refused the upload")
        return ticket

    def __getattr__(self, name: str) -> Callable[..., Any]:
        """Every `Client` method, awaited: the call is described by the sync method, sent here."""
        method = getattr(Client, name, None)
        if method is None or name.startswith("_") or name in {"request", "close"}:
            raise AttributeError(name)
        if name.startswith("iter_"):
            lister = "list_" + name.removeprefix("iter_")
            items = lister.removeprefix("list_")  # the page's field is named like the lister
            return lambda **filters: self._iterate(lister, items, filters)

        async def call(*args: Any, **kwargs: Any) -> Any:
            planned = self._routes.plan(name, *args, **kwargs)
            body = await self.request(planned.method, planned.path, params=planned.params, json=planned.json)
            return planned.model.model_validate(body) if planned.model else body

        return call

    async def _iterate(self, lister: str, items: str, filters: dict[str, Any]) -> AsyncIterator[Any]:
        cursor: str | None = None
        while True:
            page = await getattr(self, lister)(cursor=cursor, **filters)
            for item in getattr(page, items):
                yield item
            cursor = page.next_cursor
            if not cursor:
                return


class _Planned:
    def __init__(self, method: str, path: str, params: dict | None, json: Any, model: type[BaseModel] | None) -> None:
        self.method, self.path, self.params, self.json, self.model = method, path, params, json, model


class _Recorder(Client):
    """A `Client` whose wire records the call instead of sending it (for `AsyncClient`)."""

    def __init__(self) -> None:  # no HTTP client: nothing is ever sent from here
        self._last: _Planned | None = None
        self._model: type[BaseModel] | None = None

    def request(self, method: str, path: str, *, params: dict | None = None, json: Any = None) -> Any:
        self._last = _Planned(method, path, params, json, None)
        raise _Captured

    def _get(self, model: type[M], method: str, path: str, *, params: dict | None = None, json: Any = None) -> M:
        self._last = _Planned(method, path, params, json, model)
        raise _Captured

    def plan(self, name: str, *args: Any, **kwargs: Any) -> _Planned:
        try:
            getattr(Client, name)(self, *args, **kwargs)
        except _Captured:
            assert self._last is not None
            return self._last
        raise AssertionError(f"{name} sent no request")


class _Captured(Exception):
    pass
