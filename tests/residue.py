"""Residue scanner: where do these exact strings still live?

Given needle strings (planted secrets, erased content), search verbatim — case-folded, so a
lower-cased copy in a stem or a tsvector counts too — every text-like column of every table of
every schema (all tenants: it connects with the database owner's URL, which row-level security
does not filter), every object of the buckets it is given (gzip and zip members opened, PDF text
extracted, since a DOCX or a gzipped cold object hides its text from a byte search), the files
under the export folders it is given, and captured log text. It returns the hits; an empty list
is the pass.

Used by the privacy benchmark and by the erasure tests. ``tests/unit/test_residue.py`` plants
values and checks it finds them, so a scanner that looks nowhere fails.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# Column types whose text representation can carry a needle. Vectors and numbers cannot.
TEXT_TYPES = ("text", "character varying", "character", "json", "jsonb", "tsvector", "name", "xml", "citext")
SKIP_SCHEMAS = ("pg_catalog", "information_schema", "pg_toast")


@dataclass(frozen=True)
class Hit:
    """One place a needle was found: ``where`` is ``table:<schema.table>``, ``s3:<bucket>``,
    ``file:<path>`` or ``log:<name>``; ``field`` the column (or zip member); ``key`` the row's
    primary key (or object key)."""

    where: str
    field: str
    key: str
    needle: str


def _variants(needle: str) -> set[str]:
    """The needle as stored raw and as a JSON string body (newlines/quotes escaped in jsonb)."""
    out = {needle.lower()}
    escaped = json.dumps(needle)[1:-1]
    out.add(escaped.lower())
    # jsonb renders non-ASCII as-is, json.dumps escapes it: keep the ensure_ascii=False form too
    out.add(json.dumps(needle, ensure_ascii=False)[1:-1].lower())
    return {v for v in out if v}


def _needles(needles: Iterable[str]) -> list[str]:
    clean = sorted({n for n in needles if n and n.strip()})
    if not clean:
        raise ValueError("the residue scan needs at least one non-empty needle")
    return clean


def _text_hits(where: str, field: str, key: str, text: str, needles: Sequence[str]) -> list[Hit]:
    folded = text.lower()
    return [Hit(where, field, key, n) for n in needles if any(v in folded for v in _variants(n))]


# ---------------------------------------------------------------- database


def scan_database(database_url: str, needles: Iterable[str]) -> list[Hit]:
    """Every text-like, array-of-text and bytea column of every table, one statement per column."""
    import psycopg
    from psycopg import sql

    wanted = _needles(needles)
    patterns = sorted({v for n in wanted for v in _variants(n)})
    back = {v: n for n in wanted for v in _variants(n)}
    hits: list[Hit] = []
    with psycopg.connect(database_url, autocommit=True) as conn:
        # Parents of partitioned tables are scanned (they include their partitions); partitions not.
        columns = conn.execute(
            """
            SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod) AS type,
                   t.typcategory
              FROM pg_class c
              JOIN pg_namespace n ON n.oid = c.relnamespace
              JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
              JOIN pg_type t ON t.oid = a.atttypid
             WHERE c.relkind IN ('r', 'p', 'm') AND NOT c.relispartition
               AND n.nspname <> ALL(%s) AND n.nspname NOT LIKE 'pg_temp%%'
             ORDER BY 1, 2, a.attnum
            """,
            [list(SKIP_SCHEMAS)],
        ).fetchall()
        keys = _primary_keys(conn)
        for schema, table, column, type_name, category in columns:
            base = type_name.removesuffix("[]")
            is_text = base.split("(")[0] in TEXT_TYPES or category == "S"
            is_array = type_name.endswith("[]") and is_text
            is_bytea = base == "bytea"
            if not (is_text or is_array or is_bytea):
                continue
            ident = sql.Identifier(schema, table)
            col = sql.Identifier(column)
            key_cols = keys.get((schema, table))
            key_expr = (
                sql.SQL("concat_ws('/', {})").format(sql.SQL(", ").join(sql.Identifier(k) for k in key_cols))
                if key_cols
                else sql.SQL("ctid::text")
            )
            # bytea: decoded leniently (escape form) so UTF-8 text stored as bytes is found.
            value = (
                sql.SQL("lower(encode({}, 'escape'))").format(col)
                if is_bytea
                else sql.SQL("lower({}::text)").format(col)
            )
            query = sql.SQL(
                "SELECT {key} AS k, p FROM {table} t, unnest(%s::text[]) p "
                "WHERE {col} IS NOT NULL AND strpos({value}, p) > 0"
            ).format(key=key_expr, table=ident, col=col, value=value)
            for row in conn.execute(query, [patterns]).fetchall():
                hits.append(Hit(f"table:{schema}.{table}", column, str(row[0]), back[row[1]]))
    return sorted(set(hits), key=lambda h: (h.where, h.field, h.key, h.needle))


def _primary_keys(conn: Any) -> dict[tuple[str, str], list[str]]:
    rows = conn.execute(
        """
        SELECT n.nspname, c.relname, array_agg(a.attname ORDER BY k.ord)
          FROM pg_index i
          JOIN pg_class c ON c.oid = i.indrelid
          JOIN pg_namespace n ON n.oid = c.relnamespace
          CROSS JOIN LATERAL unnest(i.indkey) WITH ORDINALITY AS k(attnum, ord)
          JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = k.attnum
         WHERE i.indisprimary
         GROUP BY 1, 2
        """
    ).fetchall()
    return {(r[0], r[1]): list(r[2]) for r in rows}


# ---------------------------------------------------------------- objects and files


def _texts_of(blob: bytes, depth: int = 0) -> Iterable[tuple[str, str]]:
    """(member, text) pairs of a blob: itself decoded, and what gzip / zip / PDF hold."""
    yield "", blob.decode("utf-8", errors="replace")
    if depth > 2:
        return
    if blob[:2] == b"\x1f\x8b":
        with contextlib.suppress(OSError, EOFError):
            yield from _texts_of(gzip.decompress(blob), depth + 1)
    elif blob[:4] == b"PK\x03\x04":
        try:
            with zipfile.ZipFile(io.BytesIO(blob)) as archive:
                for name in archive.namelist():
                    for member, text in _texts_of(archive.read(name), depth + 1):
                        yield f"{name}{'/' + member if member else ''}", text
        except (zipfile.BadZipFile, OSError, ValueError):
            pass
    elif blob[:5] == b"%PDF-":
        try:
            from pypdf import PdfReader

            reader = PdfReader(io.BytesIO(blob))
            yield "pdf-text", "\n".join(page.extract_text() or "" for page in reader.pages)
        except Exception:
            pass


def scan_blob(where: str, key: str, blob: bytes, needles: Iterable[str]) -> list[Hit]:
    wanted = _needles(needles)
    hits: set[Hit] = set()
    for member, text in _texts_of(blob):
        hits.update(_text_hits(where, member or "object", key, text, wanted))
    return sorted(hits, key=lambda h: (h.key, h.field, h.needle))


def scan_buckets(s3: Any, buckets: Iterable[str], needles: Iterable[str]) -> list[Hit]:
    """Every object (every version is not kept by the local buckets) of every bucket given."""
    wanted = _needles(needles)
    hits: list[Hit] = []
    for bucket in buckets:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for obj in page.get("Contents", []):
                body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read()
                hits.extend(scan_blob(f"s3:{bucket}", obj["Key"], body, wanted))
                # object metadata can carry text too (titles, names)
                head = s3.head_object(Bucket=bucket, Key=obj["Key"])
                meta = json.dumps(head.get("Metadata", {}))
                hits.extend(_text_hits(f"s3:{bucket}", "metadata", obj["Key"], meta, wanted))
    return hits


def scan_paths(paths: Iterable[Path | str], needles: Iterable[str]) -> list[Hit]:
    """Every file under each path (a folder is walked; a file is read)."""
    wanted = _needles(needles)
    hits: list[Hit] = []
    for root in map(Path, paths):
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            hits.extend(
                scan_blob(
                    f"file:{root}",
                    str(path.relative_to(root) if root.is_dir() else path.name),
                    path.read_bytes(),
                    wanted,
                )
            )
            hits.extend(_text_hits(f"file:{root}", "path", str(path), str(path), wanted))
    return hits


def scan_logs(logs: dict[str, str], needles: Iterable[str]) -> list[Hit]:
    """Captured log text by name (caplog text, a server's stderr file, ...)."""
    wanted = _needles(needles)
    return [h for name, text in logs.items() for h in _text_hits(f"log:{name}", "text", "", text, wanted)]


def scan(
    needles: Iterable[str],
    *,
    database_url: str | None = None,
    s3: Any = None,
    buckets: Iterable[str] = (),
    paths: Iterable[Path | str] = (),
    logs: dict[str, str] | None = None,
) -> list[Hit]:
    """All of the above that is given; the hits, empty when nothing is left."""
    wanted = _needles(needles)
    hits: list[Hit] = []
    if database_url:
        hits.extend(scan_database(database_url, wanted))
    if s3 is not None:
        hits.extend(scan_buckets(s3, list(buckets), wanted))
    hits.extend(scan_paths(list(paths), wanted))
    hits.extend(scan_logs(logs or {}, wanted))
    return hits
