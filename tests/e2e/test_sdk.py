"""The Python SDK against the running local stack over real HTTP: every route family, typed answers,
cursor iteration, errors as `ApiError` with the API's code, and the async client."""

import asyncio
import time

import httpx
import pytest
from contextos import ApiError, AsyncClient, Client
from contextos.conversations import MessageAppended
from contextos.management_models import MemoryPage
from contextos.models import ContextResult
from contextos.reports import GovernanceReport

from tests.e2e.test_local_stack import stack  # noqa: F401 - the module's running stack

KEY = "ctx_local_dev_key"


@pytest.fixture
def ctx(stack):  # noqa: F811
    with Client(stack.api_url, api_key=KEY) as client:
        yield client


def wait_done(ctx: Client, document_id, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        doc = ctx.get_document(document_id)
        if doc.status in ("done", "failed"):
            return doc
        time.sleep(0.2)
    raise AssertionError("document not processed in time")


def test_documents_context_search_and_forgetting_a_document(ctx):
    text = "# Queue notes\n\nA dead letter queue keeps messages that failed three times for inspection.\n"
    accepted = ctx.add_document(text, filename="queues.md", metadata={"team": "ops"})
    assert wait_done(ctx, accepted.id).status == "done"
    assert any(d.id == accepted.id for d in ctx.iter_documents(status="done"))
    taught = ctx.document_memories(accepted.id).memories
    assert taught
    result = ctx.context("what keeps failed messages?")
    assert isinstance(result, ContextResult) and "dead letter queue" in result.context.lower()
    assert ctx.search("dead letter queue").memories
    forgotten = ctx.forget_document(accepted.id)
    assert forgotten.memories_forgotten == len(taught)
    assert all(m.id not in {t.id for t in taught} for m in ctx.search("dead letter queue").memories)
    with pytest.raises(ApiError) as error:
        ctx.get_document(accepted.id)
    assert error.value.status == 404 and error.value.code == "not_found"


def test_memories_list_edit_forget_restore_history_and_graph(ctx):
    admitted = ctx.add_memory(
        "SDK retry policy", "The SDK retries 429 and 5xx answers with backoff.", user_id="sdk-user", tags=["sdk"]
    )
    memory_id = admitted.memory_id
    assert ctx.get_memory(memory_id).label == "SDK retry policy"
    page = ctx.list_memories(user_id="sdk-user")
    assert isinstance(page, MemoryPage) and [m.id for m in page.memories] == [memory_id]
    assert memory_id in {m.id for m in ctx.iter_memories(limit=1)}  # pages through with the cursor
    edited = ctx.edit_memory(memory_id, importance=9, protected=True)
    assert edited.version == 2
    with pytest.raises(ApiError) as error:
        ctx.edit_memory(memory_id, definition="Something else.")
    assert error.value.code == "memory_protected" and error.value.status == 403
    ctx.edit_memory(memory_id, protected=False, unlock=True)
    assert ctx.forget_memory(memory_id, reason="sdk test").forgotten
    with pytest.raises(ApiError):
        ctx.get_memory(memory_id)
    assert ctx.restore_memory(memory_id).restored == "forget"
    assert ctx.memory_history(memory_id).versions
    assert ctx.memory_graph(memory_id, hops=1).nodes[0].id == memory_id
    assert any(n.id == memory_id for n in ctx.graph(limit=1000).nodes)
    scoped = ctx.context("how does the SDK retry?", scope={"user_id": "someone-else"}, dry_run=True)
    assert memory_id not in {m.id for m in scoped.memories}


def test_sessions_review_audit_reminders_health_governance_and_uploads(ctx, stack):  # noqa: F811
    appended = ctx.append_message("sdk-session", "user", "We chose blue-green deploys for the API.")
    assert isinstance(appended, MessageAppended)
    assert ctx.get_session("sdk-session").status == "open"
    assert ctx.end_session("sdk-session").status == "ended"
    assert ctx.review().items is not None
    assert ctx.audit().entries
    assert ctx.reminders().reminders is not None
    assert 0 <= ctx.health().score <= 100
    assert isinstance(ctx.governance(), GovernanceReport)
    ticket = ctx.upload_url("notes.md", content_type="text/markdown")
    assert httpx.put(ticket.url, content=b"# Notes\n", headers=ticket.headers).status_code == 200


def test_errors_carry_the_code_and_a_wrong_key_is_refused(stack):  # noqa: F811
    with Client(stack.api_url, api_key="ctx_wrong") as bad, pytest.raises(ApiError) as error:
        bad.list_memories()
    assert error.value.status == 401 and error.value.code == "unauthorized"
    with Client(stack.api_url, api_key=KEY) as ctx, pytest.raises(ApiError) as error:
        ctx.context("")
    assert error.value.status == 422 and error.value.code == "validation_error"


def test_the_async_client_speaks_the_same_api(stack):  # noqa: F811
    async def run() -> None:
        async with AsyncClient(stack.api_url, api_key=KEY) as ctx:
            admitted = await ctx.add_memory("Async note", "The async client mirrors every sync method.")
            detail = await ctx.get_memory(admitted.memory_id)
            assert detail.label == "Async note"
            seen = [m.id async for m in ctx.iter_memories(prefix="async", limit=1)]
            assert admitted.memory_id in seen
            with pytest.raises(ApiError) as error:
                await ctx.get_memory("00000000-0000-0000-0000-000000000000")
            assert error.value.code == "not_found"

    asyncio.run(run())


def test_sessions_are_listed_and_iterated_page_by_page_sync_and_async(ctx, stack):  # noqa: F811
    names = [f"sdk-list-{i}" for i in range(3)]
    for name in names:
        ctx.append_message(name, "user", f"A turn of {name}.")
    ctx.end_session(names[0])
    page = ctx.list_sessions(limit=1)
    assert len(page.sessions) == 1 and page.next_cursor
    listed = [s.id for s in ctx.iter_sessions(limit=1)]  # one session per page, through the cursor
    assert set(names) <= set(listed) and len(listed) == len(set(listed))
    ended = {s.id: s for s in ctx.iter_sessions(status="ended")}
    assert names[0] in ended and names[1] not in ended
    assert ended[names[0]].counts.flushes == 1 and ended[names[0]].message_count == 1

    async def run() -> list[str]:
        async with AsyncClient(stack.api_url, api_key=KEY) as actx:
            return [s.id async for s in actx.iter_sessions(status="open", limit=1)]

    opened = asyncio.run(run())
    assert set(names[1:]) <= set(opened) and names[0] not in opened


def test_upload_file_and_wait_for_document_sync_and_async(ctx, stack, tmp_path):  # noqa: F811
    notes = tmp_path / "uploaded-notes.md"
    notes.write_text("# Runbook\n\nThe blue-green switch flips traffic after the smoke tests pass.\n")
    ticket = ctx.upload_file(notes, content_type="text/markdown")
    record = ctx.wait_for_document(ticket.document_id, timeout_s=60, poll_s=0.2)
    assert record.status == "done" and record.id == ticket.document_id

    async_notes = tmp_path / "async-notes.md"
    async_notes.write_text("# Async runbook\n\nThe canary stage holds five percent of traffic for an hour.\n")

    async def run() -> None:
        async with AsyncClient(stack.api_url, api_key=KEY) as actx:
            uploaded = await actx.upload_file(async_notes, content_type="text/markdown")
            settled = await actx.wait_for_document(uploaded.document_id, timeout_s=60, poll_s=0.2)
            assert settled.status == "done" and settled.id == uploaded.document_id
            with pytest.raises(TimeoutError):  # a pending one (a ticket nothing was PUT to) never settles
                pending = await actx.upload_url("never-sent.md")
                await actx.wait_for_document(pending.document_id, timeout_s=0.3, poll_s=0.1)

    asyncio.run(run())


def test_export_import_and_sync_through_the_sdk_sync_and_async(ctx, stack, tmp_path):  # noqa: F811
    import io
    import tarfile

    admitted = ctx.add_memory("SDK workspace export rule", "The SDK exports the workspace as a tar.gz.", type="rule")
    archive = ctx.export()
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        names = tar.getnames()
        mine = next(n for n in names if str(admitted.memory_id)[:8] in n)
        text = tar.extractfile(mine).read().decode()
    with zipfile_of(ctx.export(format="zip")) as zipped:
        assert mine in zipped.namelist()

    edited = text.replace("as a tar.gz", "as a tar.gz, edited through the SDK")
    synced = ctx.sync({mine: edited})
    line = next(f for f in synced.files if f.path == mine)
    assert line.status == "updated" and line.memory_id == admitted.memory_id
    assert any(f.path == mine and "version: 2" in f.content for f in synced.write)
    assert "edited through the SDK" in ctx.get_memory(admitted.memory_id).definition

    folder = tmp_path / "hand"
    (folder / "07-tasks").mkdir(parents=True)
    (folder / "07-tasks" / "sdk-task.md").write_text("---\nl0: SDK imported task\n---\nImported from a folder.\n")
    (folder / "07-tasks" / "latin1.md").write_bytes("---\nl0: SDK caf\xe9\n---\nLatin-1.\n".encode("latin-1"))
    report = ctx.import_(folder)
    assert {f.path: (f.status, f.code) for f in report.files} == {
        "07-tasks/sdk-task.md": ("created", None),
        "07-tasks/latin1.md": ("failed", "not_utf8"),
    }
    with pytest.raises(FileNotFoundError):
        ctx.import_(tmp_path / "no-such-folder")

    async def run() -> None:
        async with AsyncClient(stack.api_url, api_key=KEY) as actx:
            assert (await actx.export())[:2] == b"\x1f\x8b"  # gzip
            again = await actx.sync({mine: edited}, deleted=[])
            assert next(f for f in again.files if f.path == mine).status in ("unchanged", "conflict")
            imported = await actx.import_({"07-tasks/async-task.md": "---\nl0: SDK async task\n---\nAsync.\n"})
            assert imported.files[0].status == "created"

    asyncio.run(run())


def zipfile_of(data: bytes):
    import io
    import zipfile

    return zipfile.ZipFile(io.BytesIO(data))
