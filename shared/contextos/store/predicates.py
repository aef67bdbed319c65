"""The predicates that decide which memories a read sees, on a memories alias: "live" (the hot,
current store) and "believed at %(as_of)s" (S7 bi-temporal history). Every read builds on these."""

from __future__ import annotations


def live_now(alias: str) -> str:
    """The predicate "in the hot, current store" on a memories alias: what present-time reads see."""
    return f"({alias}.state = 'active' AND {alias}.tier = 'hot')"


def believed(alias: str) -> str:
    """The predicate "believed at %(as_of)s" on a memories alias."""
    return (
        f"({alias}.tier = 'hot' AND {alias}.state <> 'archived' AND {alias}.recorded_at <= %(as_of)s"
        f" AND ({alias}.superseded_at IS NULL OR {alias}.superseded_at > %(as_of)s))"
    )
