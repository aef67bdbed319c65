"""LSH band rows (contextos.lsh) as the store writes, probes and removes them.

A document's admission writes 16 band rows per new memory and probes 16 bands per candidate, so
these statements dominate the store path at scale. What keeps them cheap (migration 0014):

- band keys are computed once, in Python (``contextos.lsh.sketch``), and travel as integer
  arrays: no string slicing per row in SQL;
- a memory's keys are also kept on its ``memory_vectors`` row (``band_keys``), so removing its
  bands is a primary-key delete by (tenant, band key, memory) and the band table needs no second
  index on (tenant, memory) that every insert would pay for;
- bands of a memory created in this transaction cannot exist yet (fresh ids), so they are
  plain inserts; only a memory whose vector is replaced takes the upsert path;
- on PostgreSQL the rows are keyed by a bigint bucket, the tenant's 32-bit hash above the band
  key (``tenant_bucket``), so an index descent compares integers, not a text tenant id; every
  lookup also checks the tenant id itself (``Dialect.band_match_sql``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any
from uuid import UUID

from contextos.lsh import BANDS, SIGNATURE_BITS, signature_prefix
from contextos.store.batch import Writes
from contextos.store.dialect import Dialect


def tenant_bucket(tenant_id: str) -> int:
    """The high half of a tenant's band buckets: the first 32 bits of md5(tenant id) as a signed
    integer, shifted up — what SQL's ``contextos_band_bucket`` (migration 0014) computes, so a
    probe sends ready bucket keys. md5 because both sides have it and it never changes."""
    high = int(hashlib.md5(tenant_id.encode()).hexdigest()[:8], 16)  # a bucket, not security
    if high >= 1 << 31:
        high -= 1 << 32
    return high << 32


def band_params(tenant_id: str) -> dict[str, Any]:
    """The parameters ``Dialect.band_match_sql`` and ``band_tenant_sql`` refer to."""
    return {"tenant": tenant_id, "tenant_bucket": tenant_bucket(tenant_id)}


def keys_literal(keys: Sequence[int]) -> str:
    """Integers as one array literal, cast to int[] in SQL: for a memory's band keys (one text value
    per memory: no 2-D arrays, which ``unnest`` would flatten), and for the 320 keys of a document,
    where the driver's per-element array dumping costs three times the string join (measured)."""
    return "{" + ",".join(map(str, keys)) + "}"


def band_sketch(keys: Sequence[int]) -> str:
    """A memory's 256-bit LSH sketch from its band keys, as '0'/'1' text (SQL ``bit(256)``): each
    band's 16 hash bits, band after band — what SQL's ``contextos_band_sketch`` (migration 0037)
    computes. The bit order differs from the signature's, which only a Hamming distance reads."""
    return "".join(format(int(k) & 0xFFFF, "016b") for k in keys)


def flat_keys(band_keys: Sequence[Sequence[int]]) -> list[int]:
    """Every memory's BANDS keys one after another, memory by memory."""
    return [int(k) for keys in band_keys for k in keys]


def insert_bands(
    conn: Writes,
    tenant_id: str,
    memory_ids: Sequence[UUID],
    signatures: Sequence[str],
    band_keys: Sequence[Sequence[int]],
    *,
    fresh: bool,
) -> None:
    """BANDS rows per memory. ``fresh``: the memories were created in this transaction, so none of
    their rows can exist and a plain insert is exact (an upsert costs a speculative insertion per
    row); otherwise rows that are already there are kept."""
    if not memory_ids:
        return
    conflict = "" if fresh else " ON CONFLICT DO NOTHING"
    conn.execute(
        f"""INSERT INTO memory_vector_bands (tenant_id, band_key, memory_id, signature, signature64)
           SELECT %s, (%s::int[])[(t.n - 1) * {BANDS} + g], t.memory_id, t.signature, t.prefix
           FROM (SELECT u.memory_id, u.bits::bit({SIGNATURE_BITS}) AS signature, u.prefix, u.n
                 FROM unnest(%b::uuid[], %b::text[], %b::int8[]) WITH ORDINALITY AS u(memory_id, bits, prefix, n)) AS t
           CROSS JOIN generate_series(1, {BANDS}) AS g{conflict}""",
        [
            tenant_id,
            keys_literal(flat_keys(band_keys)),
            list(memory_ids),
            list(signatures),
            [signature_prefix(s) for s in signatures],
        ],
    )


def delete_bands(conn: Writes, dialect: Dialect, tenant_id: str, memory_ids: Sequence[UUID]) -> None:
    """Remove the memories' band rows through the keys their vector rows carry (index probes).
    Run it while the ``memory_vectors`` rows still exist (before a delete that cascades to them)."""
    if not memory_ids:
        return
    conn.execute(
        f"""DELETE FROM memory_vector_bands b
           USING (SELECT {dialect.band_bucket_sql("k.band_key")} AS bucket, v.memory_id
                  FROM memory_vectors v, unnest(v.band_keys) AS k(band_key)
                  WHERE v.tenant_id = %(tenant)s AND v.memory_id = ANY(%(ids)b::uuid[]) OFFSET 0) AS d
           WHERE {dialect.band_row_sql("b", "d.bucket")} AND b.memory_id = d.memory_id""",
        band_params(tenant_id) | {"ids": list(memory_ids)},
    )


def delete_band_pairs(conn: Writes, dialect: Dialect, tenant_id: str, pairs: Sequence[tuple[int, UUID]]) -> None:
    """Remove band rows given as (band key, memory id) pairs (their vector rows are already gone)."""
    if not pairs:
        return
    conn.execute(
        f"""DELETE FROM memory_vector_bands b
           USING (SELECT {dialect.band_bucket_sql("p.band_key")} AS bucket, p.memory_id
                  FROM unnest(%(keys)b::int[], %(ids)b::uuid[]) AS p(band_key, memory_id) OFFSET 0) AS d
           WHERE {dialect.band_row_sql("b", "d.bucket")} AND b.memory_id = d.memory_id""",
        band_params(tenant_id) | {"keys": [int(k) for k, _ in pairs], "ids": [m for _, m in pairs]},
    )
