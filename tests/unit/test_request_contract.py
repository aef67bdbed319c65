"""What a request may carry is what the OpenAPI document says, no more and no less: JSON's own types
(no "true", 1 or 0 for a boolean, no false for a number), the forms of cursors and base64, non-blank
document text, and no empty query value — each rule the server applies is declared, and each
declared form is accepted."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest
from contextos.api.app import app
from contextos.api.openapi import openapi_document
from contextos.api.workspace import RouterRequest, SyncRequest
from contextos.current_settings import get_settings
from contextos.cursors import (
    SEQUENCE_CURSOR,
    TIME_ID_CURSOR,
    TIME_SESSION_CURSOR,
    read_sequence_cursor,
    read_time_id_cursor,
    read_time_session_cursor,
    sequence_cursor,
    time_id_cursor,
    time_session_cursor,
)
from contextos.errors import BadRequest
from contextos.governance_models import MemoryCreate
from contextos.management_models import ErasureRequest, MemoryPatch
from contextos.models import ContextRequest, DocumentCreate, SearchRequest
from contextos.workspace.model import ImportRequest, WorkspaceFile
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

FLAGS = [
    (ContextRequest, {"query": "q"}, "dry_run"),
    (ContextRequest, {"query": "q"}, "include_history"),
    (SearchRequest, {"query": "q"}, "include_history"),
    (MemoryPatch, {"label": "L"}, "protected"),
    (MemoryPatch, {"label": "L"}, "always_load"),
    (MemoryPatch, {"label": "L"}, "unlock"),
    (ImportRequest, {"files": []}, "restore"),
    (SyncRequest, {"files": []}, "prune"),
]
INTEGERS = [
    (ContextRequest, {"query": "q"}, "max_memories", 5),
    (ContextRequest, {"query": "q"}, "token_budget", 64),
    (SearchRequest, {"query": "q"}, "limit", 5),
    (MemoryCreate, {"label": "L", "definition": "D"}, "importance", 7),
    (MemoryPatch, {}, "importance", 7),
    (RouterRequest, {"tool": "claude"}, "token_budget", 500),
]
NUMBERS = [
    (ContextRequest, {"query": "q"}, "min_trust"),
    (ContextRequest, {"query": "q"}, "min_relevance"),
    (SearchRequest, {"query": "q"}, "min_trust"),
]


@pytest.mark.parametrize(("model", "base", "name"), FLAGS, ids=[f"{m.__name__}.{n}" for m, _, n in FLAGS])
@pytest.mark.parametrize("lax", ["true", "false", 1, 0])
def test_a_boolean_is_only_true_or_false(model, base, name, lax):
    assert getattr(model.model_validate(base | {name: True}), name) is True
    with pytest.raises(ValidationError):
        model.model_validate(base | {name: lax})


@pytest.mark.parametrize(
    ("model", "base", "name", "good"), INTEGERS, ids=[f"{m.__name__}.{n}" for m, _, n, _ in INTEGERS]
)
def test_an_integer_is_a_json_number_without_a_fraction(model, base, name, good):
    assert getattr(model.model_validate(base | {name: good}), name) == good
    assert getattr(model.model_validate(base | {name: float(good)}), name) == good  # 7.0 is 7 to JSON Schema
    for lax in (True, str(good), good + 0.5):
        with pytest.raises(ValidationError):
            model.model_validate(base | {name: lax})


@pytest.mark.parametrize(("model", "base", "name"), NUMBERS, ids=[f"{m.__name__}.{n}" for m, _, n in NUMBERS])
def test_a_number_is_not_a_boolean_or_a_string(model, base, name):
    assert getattr(model.model_validate(base | {name: 0}), name) == 0.0
    for lax in (False, True, "0.5"):
        with pytest.raises(ValidationError):
            model.model_validate(base | {name: lax})


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"text": "notes", "content_base64": "bm90ZXM="},
        {"text": ""},
        {"text": " \n\t "},
        {"text": None, "content_base64": "bm90ZXM="},
        {"content_base64": "not base64!"},
        {"content_base64": "bm90"[:3]},
    ],
)
def test_a_document_is_exactly_one_non_blank_content(body):
    with pytest.raises(ValidationError):
        DocumentCreate.model_validate(body)


def test_a_document_of_text_or_of_base64_bytes_is_accepted():
    assert DocumentCreate.model_validate({"text": "  notes "}).text == "  notes "
    assert DocumentCreate.model_validate({"content_base64": "bm90ZXM=", "filename": "n.txt"}).content_base64


def test_a_workspace_file_in_base64_must_be_base64():
    assert (
        WorkspaceFile.model_validate({"path": "a.md", "content": "bm90ZXM=", "encoding": "base64"}).data() == b"notes"
    )
    for content in ("ünïcode", "abc", "a===="):
        with pytest.raises(ValidationError, match="content is not base64"):
            WorkspaceFile.model_validate({"path": "a.md", "content": content, "encoding": "base64"})


def test_cursors_read_back_what_they_wrote():
    at, row = datetime(2026, 12, 3, 9, 30, 1, 123456, tzinfo=UTC), uuid4()
    assert read_time_id_cursor(time_id_cursor(at, row)) == (at, row)
    assert read_time_session_cursor(time_session_cursor(at, "claude-5f1c.x:y@z")) == (at, "claude-5f1c.x:y@z")
    assert read_sequence_cursor(sequence_cursor(41)) == 41
    assert read_time_id_cursor(None) is None and read_sequence_cursor("") is None


@pytest.mark.parametrize("garbage", ["0000", "eyJ4IjogMX0=", "12.zz", "1." + "0" * 31, " 12", "12\n"])
def test_a_cursor_of_another_form_is_refused(garbage):
    with pytest.raises(BadRequest, match="not one this API gave"):
        read_time_id_cursor(garbage)


@settings(max_examples=200, deadline=None)
@given(
    st.from_regex(TIME_ID_CURSOR, fullmatch=True),
    st.from_regex(TIME_SESSION_CURSOR, fullmatch=True),
    st.from_regex(SEQUENCE_CURSOR, fullmatch=True),
)
def test_every_string_of_a_cursors_declared_form_is_a_position(time_id, time_session, sequence):
    at, row = read_time_id_cursor(time_id)  # type: ignore[misc]
    assert isinstance(at, datetime) and isinstance(row, UUID)
    assert read_time_session_cursor(time_session) is not None
    assert read_sequence_cursor(sequence) is not None


@pytest.fixture(scope="module")
def document() -> dict:
    return openapi_document(app)


def test_no_query_parameter_is_declared_to_take_an_empty_value(document):
    """The edge refuses ``?x=`` (``empty_parameter``); the document says so for every string."""
    open_strings = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            for parameter in operation.get("parameters", []):
                if parameter["in"] != "query":
                    continue
                for option in parameter["schema"].get("anyOf", [parameter["schema"]]):
                    schema = option.get("items", option) if option.get("type") == "array" else option
                    if schema.get("type") == "string" and schema.get("minLength", 0) < 1:
                        open_strings.append(f"{method} {path} {parameter['name']}")
    assert open_strings == []


def test_every_cursor_parameter_declares_its_form(document):
    forms = {}
    for path, item in document["paths"].items():
        for parameter in item.get("get", {}).get("parameters", []):
            if parameter["name"] == "cursor":
                forms[path] = next(o["pattern"] for o in parameter["schema"]["anyOf"] if o.get("type") == "string")
    assert forms == {
        "/audit": SEQUENCE_CURSOR,
        "/documents": TIME_ID_CURSOR,
        "/memories": TIME_ID_CURSOR,
        "/reminders": TIME_ID_CURSOR,
        "/review": TIME_ID_CURSOR,
        "/sessions": TIME_SESSION_CURSOR,
    }
    assert all(re.compile(p) for p in forms.values())


def test_a_recipe_is_one_of_the_configured_ones(document):
    configured = sorted(get_settings().retrieval.recipes)
    for model in ("ContextRequest", "SearchRequest"):
        recipe = document["components"]["schemas"][model]["properties"]["recipe"]
        assert [o["enum"] for o in recipe["anyOf"] if o.get("type") == "string"] == [configured]


def test_a_user_to_erase_is_named_by_more_than_whitespace():
    assert ErasureRequest.model_validate({"user_id": " ana "}).user_id == " ana "
    for blank in (" ", "\u0085", "\u3000\t", "\x1c"):
        with pytest.raises(ValidationError):
            ErasureRequest.model_validate({"user_id": blank})


def test_a_metadata_filter_is_declared_as_key_equals_value(document):
    [metadata] = [p for p in document["paths"]["/memories"]["get"]["parameters"] if p["name"] == "metadata"]
    items = next(o["items"] for o in metadata["schema"]["anyOf"] if o.get("type") == "array")
    assert re.search(items["pattern"], "team=ops") and re.search(items["pattern"], "note=a=b")
    assert not re.search(items["pattern"], "no-equals-sign") and not re.search(items["pattern"], "=value")
