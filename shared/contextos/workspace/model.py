"""The typed shape of one workspace file: what the frontmatter and body hold."""

import base64
import binascii
from datetime import datetime
from typing import Any, Literal, Self
from uuid import UUID

from pydantic import ConfigDict, Field, StrictBool, model_validator

from contextos.modelbase import BASE64_PATTERN, BaseModel
from contextos.models import MemoryType, Provenance

EdgeType = Literal["related", "supersedes", "corroborates", "contradicts", "derived_from"]


class WorkspaceEdge(BaseModel):
    """An outgoing edge; the file of its source memory owns it."""

    model_config = ConfigDict(extra="forbid")

    id: UUID
    type: EdgeType = "related"
    weight: float = 1.0


class WorkspaceSource(BaseModel):
    """One occurrence behind a memory (a memory_item); its excerpt is the L2 text."""

    model_config = ConfigDict(extra="forbid")

    document: UUID | None = None
    filename: str | None = None
    session: str | None = None
    messages: list[int] | None = None
    at: datetime
    importance: int = Field(ge=1, le=10)
    label: str
    excerpt: str = ""  # not in the frontmatter: the L2 section carries it


class Strength(BaseModel):
    model_config = ConfigDict(extra="forbid")

    anchor: float = Field(ge=0.0, le=1.0)
    anchored: datetime
    policy: Literal["exponential", "weibull"] = "exponential"
    rate: float
    scale: float | None = None
    shape: float | None = None


class Scope(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user_id: str | None = None
    agent_id: str | None = None
    run_id: str | None = None


class Access(BaseModel):
    model_config = ConfigDict(extra="forbid")

    count: int = Field(default=0, ge=0)
    last: datetime


class State(BaseModel):
    """Lifecycle and bi-temporal state; ``superseded_by`` is the supersession chain."""

    model_config = ConfigDict(extra="forbid")

    state: Literal["active", "superseded", "archived"] = "active"
    tier: Literal["hot", "cold"] = "hot"
    superseded_by: UUID | None = None
    superseded_at: datetime | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    recorded_at: datetime | None = None
    expires_at: datetime | None = None
    cold: dict[str, Any] | None = None  # {object, start, end}: where a cold memory's full record lives


class WorkspaceMemory(BaseModel):
    """One memory as a workspace file. Fields the store owns (strength, access, state) are
    exported for fidelity; hand-written files may leave them out and get the store's defaults."""

    model_config = ConfigDict(extra="forbid")

    id: UUID | None = None
    type: MemoryType
    l0: str = Field(min_length=1, max_length=500)
    importance: int = Field(default=5, ge=1, le=10)
    tags: list[str] = Field(default_factory=list)
    related: list[WorkspaceEdge] = Field(default_factory=list)
    created: datetime | None = None
    modified: datetime | None = None
    version: int = Field(default=1, ge=1)
    always_load: bool = False
    protected: bool = False
    strength: Strength | None = None
    provenance: Provenance = Provenance.user_upload
    trust: float | None = Field(default=None, ge=0.0, le=1.0)
    scope: Scope = Field(default_factory=Scope)
    metadata: dict[str, Any] = Field(default_factory=dict)
    sources: list[WorkspaceSource] = Field(default_factory=list)
    state: State = Field(default_factory=State)
    access: Access | None = None
    hash: str | None = None  # the content hash at export; a file whose content no longer matches was edited
    l1: str = ""  # body: the definition
    # where the file was found (not part of its content)
    path: str | None = Field(default=None, exclude=True)

    def editable(self) -> dict[str, Any]:
        """The fields an edit of the file may change (the rest the store owns)."""
        return {
            "label": self.l0,
            "definition": self.l1,
            "type": self.type.value,
            "importance": self.importance,
            "tags": list(self.tags),
            "metadata": self.metadata,
            "user_id": self.scope.user_id,
            "agent_id": self.scope.agent_id,
            "run_id": self.scope.run_id,
            "always_load": self.always_load,
            "protected": self.protected,
            "expires_at": self.state.expires_at,
        }


FileStatus = Literal[
    "created", "updated", "unchanged", "held", "failed", "conflict", "refused", "document", "written", "removed"
]


class FileReport(BaseModel):
    """What happened to one file: every file gets one, and one bad file never fails the rest."""

    path: str
    status: FileStatus
    memory_id: UUID | None = None
    code: str | None = None
    reason: str | None = None


class WorkspaceFile(BaseModel):
    """A file in a request body: its path inside the workspace and its text."""

    # base64 content is declared with its form, so a client knows what the server will decode
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "if": {"properties": {"encoding": {"const": "base64"}}, "required": ["encoding"]},
            "then": {"properties": {"content": {"pattern": BASE64_PATTERN}}},
        },
    )

    path: str = Field(min_length=1, max_length=1024)
    content: str
    encoding: Literal["utf-8", "base64"] = Field(
        default="utf-8",
        description="base64: ``content`` is the file's bytes in base64 (a file that is not UTF-8 text is then "
        "refused by the server with not_utf8 on its own report line, instead of arriving altered)",
    )

    @model_validator(mode="after")
    def _base64_decodes(self) -> Self:
        if self.encoding == "base64":
            try:
                base64.b64decode(self.content, validate=True)
            except (binascii.Error, ValueError) as exc:  # ValueError: a character outside ASCII
                raise ValueError("content is not base64") from exc
        return self

    def data(self) -> bytes:
        """The file's bytes."""
        if self.encoding == "utf-8":
            return self.content.encode("utf-8")
        return base64.b64decode(self.content, validate=True)


class ImportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    files: list[WorkspaceFile] = Field(max_length=2000)
    unlock: list[UUID] = Field(default_factory=list, description="protected memories this import may change")
    restore: StrictBool = Field(
        default=False,
        description="accepted for older clients; every import keeps the ids its files carry (ids are per tenant)",
    )


class ImportReport(BaseModel):
    files: list[FileReport]
    counts: dict[str, int] = Field(default_factory=dict)


class DeletedFile(BaseModel):
    """A memory whose file the client deleted since its last sync: kept (not written back) or forgotten."""

    memory_id: UUID
    status: Literal["kept", "forgotten", "unknown"]
    code: str | None = None
    reason: str | None = None


class SyncReport(BaseModel):
    files: list[FileReport]
    counts: dict[str, int] = Field(default_factory=dict)
    write: list[WorkspaceFile] = Field(default_factory=list, description="files to (re)write in the workspace")
    remove: list[str] = Field(default_factory=list, description="paths to remove (renamed files)")
    deleted: list[DeletedFile] = Field(
        default_factory=list, description="memories whose files were deleted: not written back; forgotten with prune"
    )
