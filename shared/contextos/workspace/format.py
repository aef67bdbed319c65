"""One memory ⇄ one markdown file: stable YAML frontmatter, L1/L2 body sections, stable names.

Rendering is deterministic (fixed key order, sorted metadata, one timestamp format, no line
wrapping), so an unchanged memory renders the same bytes on every export and a changed one
changes only its own file. Parsing never trusts the file: a size cap, strict UTF-8, safe YAML
without aliases (no billion-laughs), a depth cap, duplicate keys refused, typed validation.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler
from pydantic import ValidationError

from contextos.models import MemoryType
from contextos.workspace.model import WorkspaceMemory

# Typed folders (S10); a memory's type owns it, the folder only files it.
FOLDERS: dict[MemoryType, str] = {
    MemoryType.context: "01-context",
    MemoryType.preference: "01-context",
    MemoryType.event: "02-daily",
    MemoryType.problem: "03-projects",
    MemoryType.skill: "04-skills",
    MemoryType.code: "04-skills",
    MemoryType.fact: "05-resources",
    MemoryType.entity: "05-resources",
    MemoryType.decision: "06-decisions",
    MemoryType.task: "07-tasks",
    MemoryType.rule: "08-rules",
    MemoryType.scratch: "09-scratch",
}
# A hand-written file without a type takes its folder's first type.
FOLDER_TYPES: dict[str, MemoryType] = {}
for _type, _folder in FOLDERS.items():
    FOLDER_TYPES.setdefault(_folder, _type)
HISTORY_FOLDER = "history"

L1_MARKER = "<!-- L1 -->"
L2_MARKER = "<!-- L2 -->"
_MARKER = re.compile(r"^(\\*)<!-- (L1|L2|source \d+) -->$")
_SOURCE = re.compile(r"^<!-- source (\d+) -->$")
_SLUG_DROP = re.compile(r"[^\w]+")
# A top-level key only workspace files have: how a file whose YAML does not parse is told apart.
_WORKSPACE_KEY = re.compile(r"^(l0|type|id)[ \t]*:", re.MULTILINE)
_SLUG_MAX = 60


class WorkspaceFileError(Exception):
    """A file that cannot become a memory, with a stable code and a reason for the report."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 256 * 1024
    max_frontmatter_bytes: int = 64 * 1024
    max_depth: int = 12


# -- safe YAML ------------------------------------------------------------------------------
class _Refused(yaml.composer.ComposerError):
    """A structure the workspace refuses before building it, with its own report code."""

    def __init__(self, code: str, problem: str, mark: Any) -> None:
        super().__init__(None, None, problem, mark)
        self.code = code


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader without aliases (a YAML bomb is aliases), with a nesting cap and no duplicate keys."""

    max_depth = 12

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        if self.check_event(yaml.events.AliasEvent):
            event = self.peek_event()
            raise _Refused("yaml_alias", "aliases are not allowed in workspace frontmatter", event.start_mark)
        self._depth += 1
        try:
            if self._depth > self.max_depth:
                raise _Refused(
                    "yaml_too_deep", f"nested deeper than {self.max_depth} levels", self.peek_event().start_mark
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a scalar", key_node.start_mark
                )
            if key in seen:
                raise _Refused("duplicate_key", f"duplicate key {str(key)[:40]!r}", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def _load_yaml(text: str, limits: Limits) -> Any:
    loader_class = type("_Loader", (_StrictLoader,), {"max_depth": limits.max_depth})
    loader = loader_class(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


# libyaml's emitter (shipped in PyYAML's wheels) is ~10x the pure-Python one on the export path.
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _dump_yaml(data: dict[str, Any]) -> str:
    return yaml.dump(
        data, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1_000_000
    )


# -- names ----------------------------------------------------------------------------------
def slug(label: str) -> str:
    """A file-name stem from a label: unicode letters and digits kept, the rest dashes."""
    text = unicodedata.normalize("NFKC", label).lower()
    text = _SLUG_DROP.sub("-", text).strip("-_")
    text = text[:_SLUG_MAX].rstrip("-_")
    return text or "memory"


def folder_of(memory: WorkspaceMemory) -> str:
    return HISTORY_FOLDER if memory.state.state != "active" else FOLDERS[memory.type]


def name_files(memories: Iterable[WorkspaceMemory]) -> Iterator[tuple[str, WorkspaceMemory]]:
    """(path, memory) for memories in id order: ``<folder>/<slug>-<first 8 hex of the id>.md``.

    Labels never collide (the id is in the name); two ids sharing their first 8 hex digits are
    neighbours in id order, so such a group is seen whole and every member takes its full id."""
    group: list[WorkspaceMemory] = []

    def flush() -> Iterator[tuple[str, WorkspaceMemory]]:
        full = len(group) > 1
        for m in group:
            assert m.id is not None
            suffix = m.id.hex if full else m.id.hex[:8]
            yield f"{folder_of(m)}/{slug(m.l0)}-{suffix}.md", m

    for memory in memories:
        if memory.id is None:
            raise ValueError("only stored memories (with an id) are named")
        if group and group[-1].id.hex[:8] != memory.id.hex[:8]:  # type: ignore[union-attr]
            yield from flush()
            group = []
        group.append(memory)
    yield from flush()


# -- render ---------------------------------------------------------------------------------
def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _frontmatter(memory: WorkspaceMemory) -> dict[str, Any]:
    data = memory.model_dump(mode="json", exclude={"l1", "path", "hash"})
    data["metadata"] = _sorted(data["metadata"])
    for source in data["sources"]:
        source.pop("excerpt", None)
    return data


def content_hash(memory: WorkspaceMemory) -> str:
    """The hash of everything a file says (frontmatter and body, not the hash itself)."""
    return _hash_of(_frontmatter(memory), memory)


def _hash_of(frontmatter: dict[str, Any], memory: WorkspaceMemory) -> str:
    data = {**frontmatter, "l1": memory.l1, "l2": [s.excerpt for s in memory.sources]}
    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def _escape(text: str) -> str:
    """A line of text that looks like a section marker gets one more leading backslash."""
    return "\n".join("\\" + line if _MARKER.match(line) else line for line in text.split("\n"))


def _unescape(text: str) -> str:
    return "\n".join(line[1:] if (m := _MARKER.match(line)) and m.group(1) else line for line in text.split("\n"))


def render_file(memory: WorkspaceMemory) -> str:
    """The file's text: frontmatter (with the content hash last), then L1, then L2 per source."""
    data = _frontmatter(memory)
    data["hash"] = _hash_of(data, memory)
    parts = ["---\n", _dump_yaml(data), "---\n\n", L1_MARKER, "\n", _escape(memory.l1), "\n"]
    if memory.sources:
        parts += ["\n", L2_MARKER, "\n"]
        for i, source in enumerate(memory.sources, start=1):
            parts += [f"<!-- source {i} -->\n", _escape(source.excerpt), "\n"]
    return "".join(parts)


# -- parse ----------------------------------------------------------------------------------
def has_frontmatter(text: str | bytes) -> bool:
    head = text[:64].decode("utf-8", "replace") if isinstance(text, bytes) else text
    return bool(re.match(r"\ufeff?-{3,}[ \t]*\r?\n", head))


def parse_file(path: str, data: bytes, limits: Limits = Limits()) -> WorkspaceMemory | None:
    """A workspace memory from a file, None for a file that is not one (no frontmatter, or
    frontmatter of some other tool): those are documents for S4. Raises ``WorkspaceFileError``."""
    if len(data) > limits.max_file_bytes:
        raise WorkspaceFileError("file_too_large", f"{len(data)} bytes; the limit is {limits.max_file_bytes}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise WorkspaceFileError("not_utf8", f"not valid UTF-8 at byte {exc.start}") from exc
    if "\x00" in text:
        raise WorkspaceFileError("nul_byte", "the file contains NUL bytes")
    if text.startswith("\ufeff"):
        text = text[1:]
    if not has_frontmatter(text):
        return None
    try:
        fm, body = YAMLHandler().split(text)
    except ValueError as exc:
        raise WorkspaceFileError("broken_yaml", "the frontmatter is not closed by a '---' line") from exc
    if len(fm.encode("utf-8")) > limits.max_frontmatter_bytes:
        raise WorkspaceFileError(
            "frontmatter_too_large", f"the frontmatter is over {limits.max_frontmatter_bytes} bytes"
        )
    try:
        meta = _load_yaml(fm, limits)
    except (yaml.YAMLError, RecursionError) as exc:
        if not _WORKSPACE_KEY.search(fm):
            return None  # unreadable frontmatter of some other tool: S4 reads the file as text
        if isinstance(exc, RecursionError):
            raise WorkspaceFileError("yaml_too_deep", "the frontmatter nests too deeply") from exc
        raise WorkspaceFileError(getattr(exc, "code", "broken_yaml"), _yaml_reason(exc)) from exc
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        raise WorkspaceFileError("not_a_mapping", "the frontmatter must be a mapping of keys to values")
    if "l0" not in meta and "type" not in meta:
        return None  # another tool's frontmatter: a document, not a memory
    return _to_memory(path, meta, body)


def _yaml_reason(exc: yaml.YAMLError) -> str:
    problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
    mark = getattr(exc, "problem_mark", None)
    where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"broken YAML: {problem}{where}"


def _to_memory(path: str, meta: dict[str, Any], body: str) -> WorkspaceMemory:
    meta = dict(meta)
    if "type" not in meta:
        folder = next((p for p in path.split("/") if p in FOLDER_TYPES), None)
        if folder is None:
            raise WorkspaceFileError("missing_type", "no 'type' in the frontmatter and not in a typed folder")
        meta["type"] = FOLDER_TYPES[folder].value
    if not isinstance(meta["type"], str) or meta["type"] not in MemoryType.__members__:
        raise WorkspaceFileError(
            "unknown_type", f"unknown type {str(meta['type'])[:40]!r}; one of {', '.join(MemoryType.__members__)}"
        )
    l1, excerpts = _sections(body)
    sources = meta.get("sources") or []
    if isinstance(sources, list) and excerpts is not None:
        if excerpts and len(excerpts) != len(sources):
            raise WorkspaceFileError(
                "sources_mismatch", f"{len(excerpts)} L2 excerpts for {len(sources)} sources in the frontmatter"
            )
        if sources:
            sources = [
                {**s, "excerpt": e} if isinstance(s, dict) else s for s, e in zip(sources, excerpts, strict=True)
            ]
        meta["sources"] = sources
    try:
        memory = WorkspaceMemory.model_validate({**meta, "l1": l1, "path": path})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'file'}: {e['msg']}" for e in exc.errors()[:3])
        raise WorkspaceFileError("invalid_field", problems) from exc
    if not memory.l1.strip() and memory.state.tier != "cold":  # a cold stub's text lives in cold storage
        raise WorkspaceFileError("empty_definition", "the body (L1) is empty")
    return memory


def _sections(body: str) -> tuple[str, list[str] | None]:
    """(L1 text, L2 excerpts or None). A body without markers is all L1."""
    lines = body.split("\n")
    if L1_MARKER not in lines and L2_MARKER not in lines:
        return _unescape(body).strip(), None
    l1: list[str] = []
    excerpts: list[list[str]] = []
    section = "pre"
    for line in lines:
        if line == L1_MARKER:
            section = "l1"
            continue
        if line == L2_MARKER:
            section = "l2"
            continue
        if section == "l2" and _SOURCE.match(line):
            excerpts.append([])
            continue
        if section == "l1":
            l1.append(line)
        elif section == "l2":
            if not excerpts:
                excerpts.append([])
            excerpts[-1].append(line)
        elif line.strip():
            l1.append(line)  # text before the first marker belongs to L1
    return _unescape("\n".join(l1)).strip(), [_unescape("\n".join(e)).strip() for e in excerpts]
