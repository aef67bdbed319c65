"""The workspace file format (S10), pure: stable rendering, exact parsing, names, hostile YAML."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

import pytest
from contextos.workspace import (
    WorkspaceFileError,
    WorkspaceMemory,
    WorkspaceSource,
    name_files,
    parse_file,
    render_file,
)
from contextos.workspace.format import content_hash, slug
from contextos.workspace.router import RouterEntry, render_router

AT = datetime(2026, 12, 1, 9, 30, 15, 123456, tzinfo=UTC)


def memory(hex_id: str = "0" * 32, **kwargs) -> WorkspaceMemory:
    fields = {
        "id": UUID(hex_id),
        "type": "fact",
        "l0": "Kafka consumer lag",
        "l1": "Lag grows on rebalance.",
        "created": AT,
    }
    return WorkspaceMemory(**(fields | kwargs))


def test_a_rendered_file_parses_back_to_the_same_bytes_even_with_marker_lines_in_the_text():
    m = memory(
        l1="First line\n<!-- L2 -->\n\\<!-- L1 -->\n  indented tail",
        metadata={"z": 1, "a": {"é": [1, 2.5, None]}},
        tags=["y: no", "null"],
        sources=[WorkspaceSource(at=AT, importance=4, label="src", excerpt="said\n<!-- source 1 -->\nthis")],
    )
    text = render_file(m)
    parsed = parse_file("05-resources/x.md", text.encode())
    assert parsed is not None and render_file(parsed) == text
    assert parsed.l1 == m.l1 and parsed.sources[0].excerpt == "said\n<!-- source 1 -->\nthis"
    assert parsed.hash == content_hash(parsed)


def test_rendering_is_stable_and_an_edit_changes_the_content_hash():
    m = memory(metadata={"b": 1, "a": 2})
    assert render_file(m) == render_file(memory(metadata={"a": 2, "b": 1}))
    edited = parse_file("x.md", render_file(m).replace("Lag grows", "Lag shrinks").encode())
    assert edited is not None and content_hash(edited) != edited.hash


def test_names_carry_a_short_id_and_ids_sharing_a_prefix_take_their_full_id():
    a, b, c = memory("abcdef01" + "0" * 24), memory("abcdef01" + "1" * 24), memory("12345678" + "0" * 24, type="rule")
    names = [p for p, _ in name_files(sorted([a, b, c], key=lambda m: m.id))]
    assert names == [
        "08-rules/kafka-consumer-lag-12345678.md",
        f"05-resources/kafka-consumer-lag-{a.id.hex}.md",
        f"05-resources/kafka-consumer-lag-{b.id.hex}.md",
    ]
    assert slug("../../etc/passwd") == "etc-passwd" and slug("東京 ☕") == "東京" and slug("!!!") == "memory"
    superseded = memory(state={"state": "superseded"})
    assert next(name_files([superseded]))[0].startswith("history/")


def test_a_hand_written_file_takes_its_type_from_the_folder_and_its_body_as_l1():
    parsed = parse_file("07-tasks/todo.md", b"---\nl0: Rotate certs\n---\nRotate before March.\n")
    assert parsed is not None and parsed.type.value == "task" and parsed.l1 == "Rotate before March."
    assert parse_file("notes.md", b"# Just markdown\ntext") is None
    assert parse_file("post.md", b"---\ntitle: A blog post\n---\ntext") is None  # another tool's frontmatter


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"---\na: &a [1]\nb: *a\nl0: x\n---\nbody", "yaml_alias"),
        (b"---\nl0: x\nm: " + b"[" * 50 + b"]" * 50 + b"\n---\nbody", "yaml_too_deep"),
        (b"---\nl0: x\nl0: y\n---\nbody", "duplicate_key"),
        (b"---\nl0: !!python/object/apply:os.system [id]\n---\nbody", "broken_yaml"),
        (b"---\nl0: [\n---\nbody", "broken_yaml"),
        (b"---\ntype: gossip\nl0: x\n---\nbody", "unknown_type"),
        (b"---\nl0: x\ntype: fact\nsurprise: 1\n---\nbody", "invalid_field"),
        (b"---\nl0: x\ntype: fact\n---\n", "empty_definition"),
        (b"---\nl0: x\n---\nb\xff", "not_utf8"),
        (b"---\n" + b"x" * (300 * 1024), "file_too_large"),
        (
            b"---\nl0: x\ntype: fact\n---\n<!-- L1 -->\nd\n<!-- L2 -->\nan excerpt without a source\n",
            "sources_mismatch",
        ),
    ],
)
def test_hostile_files_fail_with_a_stable_code(data, code):
    with pytest.raises(WorkspaceFileError) as caught:
        parse_file("05-resources/x.md", data)
    assert caught.value.code == code and caught.value.reason


def test_a_router_file_puts_rules_first_and_the_index_last_within_its_budget():
    entries = [RouterEntry("Never log secrets", "No credentials in logs.", "rule", 9, False)] + [
        RouterEntry(f"Memory {i}", "A definition of some length " * 5, "fact", 5, False) for i in range(40)
    ]
    text = render_router("cursor", entries, token_budget=300)
    assert text.index("## Rules") < text.index("## Key memories") < text.index("## Index") < text.index("## MCP")
    assert len(text) // 4 <= 300 and "- Memory 39 (fact)" not in text


def test_a_cold_stub_has_no_l1_and_still_parses():
    stub = memory(
        l1="", state={"state": "archived", "tier": "cold", "cold": {"object": "cold/t/x", "start": 0, "end": 9}}
    )
    parsed = parse_file("history/x.md", render_file(stub).encode())
    assert parsed is not None and parsed.l1 == "" and render_file(parsed) == render_file(stub)


def test_unreadable_frontmatter_without_workspace_keys_is_a_document_not_a_failure():
    bomb = b"---\na: &a [lol, lol]\nb: [*a, *a]\n---\n# Release checklist\n"
    assert parse_file("release.md", bomb) is None
    with pytest.raises(WorkspaceFileError):
        parse_file("release.md", bomb.replace(b"---\na:", b"---\nl0: x\na:"))
