"""SQL fragments shared by the store's queries (both dialects agree on these).

Strength is computed in SQL from the anchors with the same closed form as ``contextos.decay``,
so ranking, reinforcement and the scan never disagree with the pure module.
"""

from __future__ import annotations

from contextos.config import DecaySettings


def current_strength(alias: str = "m") -> str:
    """S(now) = anchor · (1 − λ)^(days since the anchor), exponential policy."""
    return (
        f"({alias}.strength_anchor * power(1.0 - {alias}.decay_rate,"
        f" extract(epoch FROM (now() - {alias}.strength_anchor_at)) / 86400.0))"
    )


def band_case(strength_sql: str, d: DecaySettings) -> str:
    return (
        f"(CASE WHEN {strength_sql} > {d.band_strong} THEN 'strong'"
        f" WHEN {strength_sql} >= {d.band_fading} THEN 'fading'"
        f" WHEN {strength_sql} >= {d.band_forgotten} THEN 'critical' ELSE 'forgotten' END)"
    )


def next_transition(anchor_sql: str, anchor_at_sql: str, rate_sql: str, strength_sql: str, d: DecaySettings) -> str:
    """When the strength next falls below a band boundary: closed form, so the scan can skip the rest."""
    boundary = (
        f"(CASE WHEN {strength_sql} > {d.band_strong} THEN {d.band_strong}"
        f" WHEN {strength_sql} >= {d.band_fading} THEN {d.band_fading}"
        f" WHEN {strength_sql} >= {d.band_forgotten} THEN {d.band_forgotten} END)"
    )
    return (
        f"(CASE WHEN {boundary} IS NULL OR {rate_sql} <= 0 THEN NULL ELSE"
        f" {anchor_at_sql} + (ln({boundary} / GREATEST({anchor_sql}, 1e-9)) / ln(1.0 - {rate_sql}))"
        f" * interval '1 day' END)"
    )
