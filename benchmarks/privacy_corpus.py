"""The privacy benchmark's benign corpus: real third-party documents that Debian packages install
(READMEs, changelogs, copyright files, man pages, example code), from a fixed list of packages.

Chosen by rule, not by hand: every file of the packages below under /usr/share/doc and
/usr/share/man (English man pages only) whose name says it is a document, decompressed, sorted
by path, then every k-th so that ``size`` documents are taken. The list is fixed before the
redactor is tuned against it; the benchmark installs missing packages with apt-get.
"""

from __future__ import annotations

import gzip
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

PACKAGES = (
    "git",
    "git-man",
    "procps",
    "coreutils",
    "openssh-client",
    "gzip",
    "zstd",
    "util-linux",
    "apt",
    "dpkg",
    "grep",
    "sed",
    "tar",
    "bash",
    "make",
    "findutils",
    "python3-yaml",
    "libtasn1-doc",
    "shared-mime-info",
    "curl",
)
DOCUMENT = re.compile(
    r"(README[^/]*|\.md|\.markdown|\.txt|\.py|\.sh|\.c|\.h|\.pl|\.html?|\.[1-8]|copyright|changelog[^/]*|NEWS[^/]*)(\.gz)?$"
)
MAX_CHARS = 200_000  # a document's first 200k characters (the biggest changelogs are longer)


@dataclass(frozen=True)
class Document:
    path: str
    package: str
    text: str


def ensure_installed(packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Install what is missing (Debian's apt); the packages that are there afterwards."""
    missing = [p for p in packages if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode != 0]
    if missing:
        subprocess.run(["apt-get", "install", "-y", "--no-install-recommends", *missing], capture_output=True)
    return [p for p in packages if subprocess.run(["dpkg", "-s", p], capture_output=True).returncode == 0]


def candidates(packages: list[str]) -> list[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for package in packages:
        listed = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True).stdout.splitlines()
        for path in listed:
            if not path.startswith(("/usr/share/doc/", "/usr/share/man/man")):
                continue  # man pages in other languages are left out (/usr/share/man/<lang>/)
            if DOCUMENT.search(path) and Path(path).is_file() and not Path(path).is_symlink():
                out.add((path, package))
    return sorted(out)


def read(path: str) -> str | None:
    data = Path(path).read_bytes()
    if path.endswith(".gz"):
        try:
            data = gzip.decompress(data)
        except OSError:
            return None
    if b"\x00" in data[:4096]:
        return None
    text = data.decode("utf-8", errors="replace")
    return text[:MAX_CHARS] if text.strip() else None


def corpus(size: int = 400) -> list[Document]:
    files = candidates(ensure_installed())
    step = max(1, len(files) // size)
    docs: list[Document] = []
    for path, package in files[::step]:
        text = read(path)
        if text is not None:
            docs.append(Document(path, package, text))
        if len(docs) >= size:
            break
    return docs
