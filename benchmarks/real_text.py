"""A real-text corpus for the benchmarks: English technical text that Debian ships, split the way
ingestion splits documents, embedded once into a cached pool that tenants draw their memories from.

Sources (installed with apt when missing, never committed): the Python 3 documentation's reST
sources (`python3-doc`), the PostgreSQL manual (`postgresql-doc-15`, HTML), Perl's POD manual
(`perl-doc`) and Git's documentation (`git-doc`). Each file goes through ingestion's own code:
``parse_document`` (sniffing, HTML extraction, normalisation, domain), ``split_sections`` by the
detected domain and ``pack_sections`` into passages of at most `PASSAGE_TOKENS` (a memory's
definition, not an extraction window). A passage becomes a memory: the section title (or the
passage's first words) as its label, the passage as its definition. The vocabulary is intact.

The pool (texts and MiniLM vectors) is built once into ``~/.cache/contextos-bench/real-text/<key>``
(outside git; the key hashes the sources' file list, the splitting parameters and the model), in
chunks, so an interrupted build resumes. ~370 passages/s on two idle cores.

Run alone to build or check the pool: ``.venv/bin/python -m benchmarks.real_text --pool 120000``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from contextos.errors import ContextOSError
from contextos.parsing import pack_sections, parse_document, split_sections

PASSAGE_TOKENS = 40
MIN_WORDS = 8
CHUNK = 4096  # passages embedded per checkpoint
CACHE = Path(os.environ.get("CONTEXTOS_BENCH_CACHE", Path.home() / ".cache" / "contextos-bench")) / "real-text"

# (apt package, directory, file name pattern, declared type for the parser)
SOURCES: tuple[tuple[str, str, str, str | None], ...] = (
    ("python3-doc", "/usr/share/doc/python3.11/html/_sources", r".*\.rst\.txt$", "text/markdown"),
    ("postgresql-doc-15", "/usr/share/doc/postgresql-doc-15/html", r".*\.html$", "text/html"),
    ("perl-doc", "/usr/share/perl/5.36.0/pod", r".*\.pod$", "text/plain"),
    ("git-doc", "/usr/share/doc/git-doc", r".*\.txt$", "text/plain"),
)
_POD_COMMAND = re.compile(r"^=(?:head\d|item|over|back|pod|cut|begin|end|for|encoding)\b ?", re.MULTILINE)
_POD_CODES = re.compile(r"[BCEFILSXZ]<+([^<>]*)>+")
_RST_MARKUP = re.compile(r":(?:\w+:)*`~?([^`<]*?)(?:\s*<[^>]*>)?`|``([^`]*)``|\.\. [\w-]+::.*$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class Passage:
    label: str
    text: str
    source: str  # package


def ensure_packages() -> None:
    """Install the source packages with apt when their directories are missing (root, as here)."""
    missing = [package for package, directory, _, _ in SOURCES if not Path(directory).is_dir()]
    if not missing:
        return
    print(f"apt-get install {' '.join(missing)} …", flush=True)
    env = os.environ | {"DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-q", *missing], check=True, env=env, stdout=subprocess.DEVNULL)


def _files() -> list[tuple[str, Path, str | None]]:
    found = []
    for package, directory, pattern, declared in SOURCES:
        match = re.compile(pattern)
        for path in sorted(Path(directory).rglob("*")):
            if path.is_file() and match.match(path.name):
                found.append((package, path, declared))
    return found


def _markup_out(text: str, package: str) -> str:
    """What a person would paste: POD and reST commands reduced to their text (the rest is ingestion's)."""
    if package == "perl-doc":
        text = _POD_CODES.sub(r"\1", _POD_COMMAND.sub("", text))
    elif package == "python3-doc":
        text = _RST_MARKUP.sub(lambda m: m.group(1) or m.group(2) or "", text)
    return text


def _passages_of(package: str, path: Path, declared: str | None) -> Iterator[Passage]:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    if package in ("perl-doc", "python3-doc"):
        data = _markup_out(data.decode("utf-8", "replace"), package).encode()
    try:
        parsed = parse_document(data, filename=path.name, declared_type=declared)
    except ContextOSError:
        return
    for section in split_sections(parsed.text, parsed.domain):
        title = (section.title or "").strip()
        for chunk in pack_sections([section], PASSAGE_TOKENS):
            text = " ".join(chunk.split())
            words = text.split()
            if len(words) < MIN_WORDS or sum(w.isalpha() for w in words) < len(words) / 2:
                continue  # code, tables, option lists: not prose
            label = title if title and len(title) <= 80 else " ".join(words[:6])
            yield Passage(label=label.strip(" :#*=-"), text=text, source=package)


def passages() -> list[Passage]:
    """Every distinct passage of the sources, the sources interleaved (so any prefix mixes them),
    each in file order: deterministic for a given set of installed files."""
    seen: set[str] = set()
    by_source: dict[str, list[Passage]] = {}
    for package, path, declared in _files():
        for passage in _passages_of(package, path, declared):
            digest = hashlib.blake2b(passage.text.encode(), digest_size=12).hexdigest()
            if digest not in seen:
                seen.add(digest)
                by_source.setdefault(package, []).append(passage)
    lists = list(by_source.values())
    return [p for i in range(max(map(len, lists), default=0)) for p in (lst[i] for lst in lists if i < len(lst))]


@dataclass(frozen=True)
class Pool:
    passages: list[Passage]
    vectors: np.ndarray  # float32, one unit vector per passage
    key: str
    build_s: float  # embedding time spent by this call (0 when all of it came from the cache)


def _key(model_id: str) -> str:
    listing = "\n".join(f"{p}:{f}:{f.stat().st_size}" for p, f, _ in _files())
    recipe = f"{listing}|{PASSAGE_TOKENS}|{MIN_WORDS}|{model_id}"
    return hashlib.sha256(recipe.encode()).hexdigest()[:16]


def pool(size: int, *, build: bool = True) -> Pool:
    """The first ``size`` passages and their vectors: read from the cache, embedding (resumably,
    `CHUNK` passages a file) whatever is missing, or refusing to when ``build`` is false."""
    ensure_packages()
    from contextos.embedding.local import LocalMiniLMEmbedder

    where = CACHE / _key(LocalMiniLMEmbedder.model_id)
    where.mkdir(parents=True, exist_ok=True)
    texts_file = where / "passages.jsonl"
    if not texts_file.exists():
        tmp = texts_file.with_suffix(".tmp")
        tmp.write_text("".join(json.dumps(_row(p)) + "\n" for p in passages()))
        tmp.replace(texts_file)
    everything = [Passage(**json.loads(line)) for line in texts_file.read_text().splitlines()]
    if size > len(everything):
        raise ValueError(f"the sources hold {len(everything)} distinct passages, not {size}")
    model: LocalMiniLMEmbedder | None = None
    started = time.perf_counter()
    parts = []
    for start in range(0, size, CHUNK):  # whole chunks of the full list: a larger pool reuses them
        part = where / f"part-{start // CHUNK:05d}.npy"
        if not part.exists():
            if not build:
                raise FileNotFoundError(
                    f"{part} is not embedded yet (run: python -m benchmarks.real_text --pool {size})"
                )
            model = model or LocalMiniLMEmbedder()
            vectors = np.asarray(model.embed([p.text for p in everything[start : start + CHUNK]]), dtype=np.float32)
            np.save(where / f"tmp-{os.getpid()}.npy", vectors)
            (where / f"tmp-{os.getpid()}.npy").replace(part)
            print(
                f"  embedded {start + len(vectors)}/{size} passages"
                f" ({(start + len(vectors)) / (time.perf_counter() - started):.0f}/s)",
                flush=True,
            )
        parts.append(np.load(part))
    vectors = np.concatenate(parts)[:size] if parts else np.zeros((0, 384), dtype=np.float32)
    return Pool(everything[:size], vectors, where.name, time.perf_counter() - started if model else 0.0)


def _row(p: Passage) -> dict:
    return {"label": p.label, "text": p.text, "source": p.source}


def zipf_slope(frequencies: list[int], *, first: int = 10, last: int = 10_000) -> float:
    """The least-squares slope of log(frequency) over log(rank), ranks ``first``..``last`` (about -1 for
    natural text; a templated corpus's few hundred words give no long tail at all)."""
    ordered = sorted((f for f in frequencies if f > 0), reverse=True)
    ranks = np.arange(1, len(ordered) + 1)
    window = slice(first - 1, min(last, len(ordered)))
    if window.stop - window.start < 3:
        return 0.0
    slope, _ = np.polyfit(np.log(ranks[window]), np.log(np.asarray(ordered[window], dtype=float)), 1)
    return round(float(slope), 3)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pool", type=int, default=120_000)
    parser.add_argument("--count-only", action="store_true", help="split the sources and count, embed nothing")
    args = parser.parse_args()
    if args.count_only:
        ensure_packages()
        started = time.perf_counter()
        found = passages()[: args.pool]
        by_source: dict[str, int] = {}
        for p in found:
            by_source[p.source] = by_source.get(p.source, 0) + 1
        print(f"{len(found)} passages in {time.perf_counter() - started:.0f} s: {by_source}")
        for p in found[:: max(1, len(found) // 8)]:
            print(f"  [{p.source}] {p.label!r}: {p.text[:160]!r}")
        return
    built = pool(args.pool)
    print(
        f"pool {built.key}: {len(built.passages)} passages, vectors {built.vectors.shape},"
        f" embedded in {built.build_s:.0f} s"
    )


if __name__ == "__main__":
    main()
