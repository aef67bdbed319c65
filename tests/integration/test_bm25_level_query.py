"""The BM25 gathering's level query (migration 0038) on real PostgreSQL: for every n up to 7 and
every m, the tsquery holds for exactly the lexeme sets with at least m of the n lexemes (every
subset checked), and it is smaller than the recursion it replaced."""

import itertools

import pytest
from contextos import container

LEXEMES = ["zebra", "walrus", "heron", "badger", "otter", "falcon", "lynx"]


def recursion_0027(lex: list[str], m: int) -> str | None:
    """Migration 0027's form: at_least(m, [x, rest]) = (x & at_least(m - 1, rest)) | at_least(m, rest)."""
    if m <= 0 or m > len(lex):
        return None
    if m == len(lex):
        return "(" + " & ".join(f"'{x}'" for x in lex) + ")"
    head, rest = f"'{lex[0]}'", recursion_0027(lex[1:], m - 1)
    if rest is not None:
        head = f"({head} & {rest})"
    return f"({head} | {recursion_0027(lex[1:], m)})"


@pytest.mark.parametrize("n", range(1, len(LEXEMES) + 1))
def test_the_level_query_holds_for_exactly_the_sets_with_m_of_the_lexemes(configured, tenant, n):
    lex = LEXEMES[:n]
    subsets = [list(s) for size in range(n + 1) for s in itertools.combinations(lex, size)]
    with container.database().tenant_tx(tenant) as conn:
        for m in range(0, n + 2):
            q = conn.execute("SELECT contextos_at_least_query(%s, %s) AS q", [lex, m]).fetchone()["q"]
            if m == 0 or m > n:
                assert q is None, m
                continue
            held = conn.execute(
                "SELECT array_to_tsvector(s::text[]) @@ %s::tsquery AS ok FROM unnest(%s::text[]) s(s)",
                [q, ["{" + ",".join(s) + "}" for s in subsets]],
            ).fetchall()
            assert [r["ok"] for r in held] == [len(s) >= m for s in subsets], (n, m, q)
            old = recursion_0027(lex, m)
            sizes = conn.execute("SELECT numnode(%s::tsquery) AS new, numnode(%s::tsquery) AS old", [q, old]).fetchone()
            assert sizes["new"] <= sizes["old"], (n, m)
            if n >= 5 and 1 < m < n:
                assert sizes["new"] < sizes["old"], (n, m)
