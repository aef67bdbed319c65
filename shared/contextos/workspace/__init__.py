"""The markdown workspace (S10): memories as files with YAML frontmatter, and back.

Pure core: the file format, names and router files. No database, no AWS.
"""

from contextos.workspace.format import (
    FOLDERS,
    WorkspaceFileError,
    content_hash,
    folder_of,
    name_files,
    parse_file,
    render_file,
)
from contextos.workspace.model import WorkspaceEdge, WorkspaceMemory, WorkspaceSource

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
