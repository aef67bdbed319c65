"""The markdown workspace (S10): memories as files with YAML frontmatter, and back.

Pure core: the file format, names and router files. No database, no AWS.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

# The names load on first use: the format pulls YAML and frontmatter, which the API's workspace
# models (contextos.workspace.model) do not need.
_OWNERS = {
    "FOLDERS": "format",
    "WorkspaceFileError": "format",
    "content_hash": "format",
    "folder_of": "format",
    "name_files": "format",
    "parse_file": "format",
    "render_file": "format",
    "WorkspaceEdge": "model",
    "WorkspaceMemory": "model",
    "WorkspaceSource": "model",
}

__all__ = [
    "FOLDERS",
    "WorkspaceEdge",
    "WorkspaceFileError",
    "WorkspaceMemory",
    "WorkspaceSource",
    "content_hash",
    "folder_of",
    "name_files",
    "parse_file",
    "render_file",
]


def __getattr__(name: str) -> Any:
    owner = _OWNERS.get(name)
    if owner is None:
        raise AttributeError(f"module 'contextos.workspace' has no attribute {name!r}")
    return getattr(import_module(f"contextos.workspace.{owner}"), name)
