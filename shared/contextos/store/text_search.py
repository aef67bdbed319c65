"""S6.2's text search: every key phrase of a query, in one call, with bounded work per phrase.

Per phrase, the memories holding all of its words (or all the words of one of its synonyms) are
ranked first, the phrase verbatim before the rest; only when fewer than k do, the memories holding
some of the words fill the remaining places. At most ``cap`` matches of each form are ranked, so a
broad phrase costs about the same at 1k memories as at 1M. On PostgreSQL the text is parsed by
``to_tsvector`` (as the memories were) and its lexemes are quoted, so no tsquery syntax can be
injected; the words most of a large tenant's memories hold are left out (migration 0015,
recounted by the lifecycle scan). The inline form for CockroachDB keeps plain ``[A-Za-z0-9]+``
words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from contextos.ports.reads import BM25Params
from contextos.scopes import ScopeFilter
from contextos.store.dialect import Dialect

_WORD = re.compile(r"[A-Za-z0-9]+")


def _words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text) if len(w) > 1]


def phrase_forms(terms: Sequence[str]) -> tuple[str | None, str | None]:
    """(all, any) tsquery texts for a phrase and its synonyms: every word of the phrase or of one
    synonym (``(a & b) | (c)``), and any of their words (``a | b | c``)."""
    groups = [words for words in (_words(term) for term in terms) if words]
    every = " | ".join("(" + " & ".join(words) + ")" for words in groups)
    some = " | ".join(sorted({w for words in groups for w in words}))
    return every or None, some or None


_LIVE = "m.state = 'active' AND m.tier = 'hot'"
_BELIEVED = (
    "m.tier = 'hot' AND m.state <> 'archived' AND m.recorded_at <= %(as_of)s"
    " AND (m.superseded_at IS NULL OR m.superseded_at > %(as_of)s)"
)


def _inline_sql(every: bool, as_of: bool) -> str:
    """One phrase, one form, for dialects without the function (CockroachDB)."""
    scope = _BELIEVED if as_of else _LIVE
    if every:
        return f"""SELECT m.id,
                          2.0 * ts_rank_cd(m.search_tsv, to_tsquery('english', %(all)s))
                          + ts_rank(m.search_tsv, to_tsquery('english', %(any)s)) AS rank,
                          (position(%(lower)s IN lower(m.label)) > 0
                           OR position(%(lower)s IN lower(m.definition)) > 0) AS label_match
                   FROM memories m
                   WHERE m.tenant_id = %(tenant)s AND {scope}
                     AND m.search_tsv @@ to_tsquery('english', %(all)s)
                   ORDER BY label_match DESC, rank DESC, m.id
                   LIMIT %(k)s"""
    return f"""SELECT m.id, ts_rank(m.search_tsv, to_tsquery('english', %(any)s)) AS rank, false AS label_match
               FROM memories m
               WHERE m.tenant_id = %(tenant)s AND {scope}
                 AND m.search_tsv @@ to_tsquery('english', %(any)s)
                 AND NOT m.search_tsv @@ to_tsquery('english', %(all)s)
               ORDER BY rank DESC, m.id
               LIMIT %(k)s"""


def phrases_call(
    phrases: Sequence[Sequence[str]], *, k: int, cap: int, as_of: datetime | None = None
) -> tuple[str, list]:
    """The PostgreSQL function call (migration 0015) and its parameters."""
    flat = [(number, term) for number, terms in enumerate(phrases, start=1) for term in terms]
    return (
        "SELECT * FROM contextos_text_search_phrases(%s, %s, %s, %s, %s, %s)",
        [[terms[0] for terms in phrases], [t for _, t in flat], [n for n, _ in flat], k, cap, as_of],
    )


def search_phrases(
    conn: Any,
    dialect: Dialect,
    tenant_id: str,
    phrases: Sequence[Sequence[str]],
    *,
    k: int,
    cap: int,
    as_of: datetime | None = None,
) -> list[dict]:
    """Rows ``(phrase_no, id, rank, label_match)``, best first within each phrase (1-based
    ``phrase_no``), inside the caller's tenant transaction. ``phrases`` holds each phrase followed
    by its synonyms."""
    if not phrases:
        return []
    if dialect.ranks_in_sql():
        return conn.execute(*phrases_call(phrases, k=k, cap=cap, as_of=as_of)).fetchall()
    forms = [phrase_forms(terms) for terms in phrases]
    out: list[dict] = []
    for number, (terms, (every, some)) in enumerate(zip(phrases, forms, strict=True), start=1):
        if every is None:
            continue
        params = {"all": every, "any": some, "lower": terms[0].lower(), "tenant": tenant_id, "k": k, "as_of": as_of}
        rows = conn.execute(_inline_sql(True, as_of is not None), params).fetchall()
        if len(rows) < k:
            params["k"] = k - len(rows)
            rows += conn.execute(_inline_sql(False, as_of is not None), params).fetchall()
        out += [{"phrase_no": number, **row} for row in rows]
    return out


def bm25_call(
    query: str,
    extra: Sequence[str],
    *,
    k: int,
    cap: int | None,
    params: BM25Params,
    as_of: datetime | None = None,
    with_cold: bool = False,
    scope: ScopeFilter | None = None,
) -> tuple[str, list]:
    """The PostgreSQL BM25 call (store/definitions/contextos_bm25_rank.sql): rows ``(id, score,
    matched, cold)``, best first (hot memories, then the cold stubs when ``with_cold``). ``cap``
    None ranks every match (exact). ``scope`` (its user, agent, run and tags; metadata is the
    caller's to check) is applied while the matches are gathered."""
    return (
        "SELECT * FROM contextos_bm25_rank(%s::text, %s::text[], %s::real, %s::int, %s::int, %s::real, %s::real,"
        " %s::int, %s::timestamptz, %s::boolean, %s::text, %s::text, %s::text, %s::text[])",
        [
            query,
            list(extra),
            params.extra_weight,
            k,
            cap,
            params.k1,
            params.b,
            params.df_live_max,
            as_of,
            with_cold,
            *_scope_args(scope),
        ],
    )


def _scope_args(scope: ScopeFilter | None) -> list:
    if scope is None or scope.empty:
        return [None, None, None, None]
    return [scope.user_id, scope.agent_id, scope.run_id, list(scope.tags) or None]


def rank_text(
    conn: Any,
    dialect: Dialect,
    tenant_id: str,
    query: str,
    extra: Sequence[str],
    phrases: Sequence[Sequence[str]],
    *,
    k: int,
    cap: int,
    params: BM25Params,
    as_of: datetime | None = None,
    with_cold: bool = False,
) -> list[dict]:
    """BM25 on PostgreSQL; dialects without the function rank by the inline phrase search
    (``ts_rank``), one row per memory at its best phrase."""
    if dialect.ranks_in_sql():
        return conn.execute(
            *bm25_call(query, extra, k=k, cap=cap, params=params, as_of=as_of, with_cold=with_cold)
        ).fetchall()
    best: dict = {}
    for row in search_phrases(conn, dialect, tenant_id, phrases, k=k, cap=cap, as_of=as_of):
        if row["id"] not in best or float(row["rank"]) > best[row["id"]]["score"]:
            best[row["id"]] = {"id": row["id"], "score": float(row["rank"]), "matched": 1, "cold": False}
    return sorted(best.values(), key=lambda r: -r["score"])[:k]
