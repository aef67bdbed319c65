"""SQL fragments shared by the store's queries (both dialects agree on these).

Strength is computed in SQL from the anchors with the same closed forms as ``contextos.decay``
(exponential and Weibull, chosen by each row's ``decay_policy``), so ranking, reinforcement and
the scan never disagree with the pure module.
"""

from __future__ import annotations

from contextos.config import DecaySettings


def _days_since(anchor_at_sql: str) -> str:
    """Days since the anchor, never negative (a concurrent re-anchor may be newer than now())."""
    return f"(GREATEST(extract(epoch FROM (now() - {anchor_at_sql})), 0) / 86400.0)"


# PostgreSQL raises on a float underflow (exp(-800), power(2e-16, 111)) where Python gives 0.0. A
# strength that small is in the forgotten band whatever its exact value, so the exponent stops at
# -700 (exp(-700) ≈ 1e-304) and the SQL agrees with ``contextos.decay`` on every band.
_LOWEST_EXPONENT = 700.0


def exponential_strength(anchor: str, rate: str, days: str) -> str:
    """S0·(1 − λ)^days, written as exp(days·ln(1 − λ)) so it can be floored before it underflows."""
    return f"{anchor} * exp(GREATEST({days} * ln(1.0 - {rate}), -{_LOWEST_EXPONENT}))"


def weibull_strength(anchor: str, scale: str, shape: str, days: str) -> str:
    """S0·exp(−(days/η)^k), its exponent floored as above."""
    return f"{anchor} * exp(-LEAST(power({days} / {scale}, {shape}), {_LOWEST_EXPONENT}))"


def current_strength(alias: str = "m") -> str:
    """S(now) from the row's anchors: S0·(1 − λ)^days, or S0·exp(−(days/η)^k) for Weibull rows."""
    return strength_since(
        f"{alias}.strength_anchor",
        f"{alias}.strength_anchor_at",
        f"{alias}.decay_rate",
        policy_sql=f"{alias}.decay_policy",
        scale_sql=f"{alias}.decay_scale",
        shape_sql=f"{alias}.decay_shape",
    )


def strength_since(
    anchor_sql: str, anchor_at_sql: str, rate_sql: str, *, policy_sql: str, scale_sql: str, shape_sql: str
) -> str:
    """S(now) from any anchors (a row's, or the ones a new row is given)."""
    days = _days_since(anchor_at_sql)
    return (
        f"(CASE WHEN {policy_sql} = 'weibull'"
        f" THEN {weibull_strength(anchor_sql, scale_sql, shape_sql, days)}"
        f" ELSE {exponential_strength(anchor_sql, rate_sql, days)} END)"
    )


def reinforced(strength_sql: str, d: DecaySettings) -> str:
    """S ← 0.7·S + 0.3 (the same arithmetic as ``contextos.decay.reinforce``)."""
    return f"LEAST(1.0, {d.reinforce_keep} * {strength_sql} + {1 - d.reinforce_keep})"


def weibull_scale(access_count_sql: str, d: DecaySettings) -> str:
    """η = 7 · min(1 + 0.5 · access_count, 5) days (``contextos.decay.weibull_scale``)."""
    w = d.weibull
    return f"({w.scale_base_days} * LEAST(1.0 + {w.scale_access_step} * ({access_count_sql}), {w.scale_cap}))"


def _forgotten_below(policy_sql: str, d: DecaySettings) -> str:
    return f"(CASE WHEN {policy_sql} = 'weibull' THEN {d.weibull.archive_below} ELSE {d.band_forgotten} END)"


def band_case(strength_sql: str, d: DecaySettings, policy_sql: str = "m.decay_policy") -> str:
    return (
        f"(CASE WHEN {strength_sql} > {d.band_strong} THEN 'strong'"
        f" WHEN {strength_sql} >= {d.band_fading} THEN 'fading'"
        f" WHEN {strength_sql} >= {_forgotten_below(policy_sql, d)} THEN 'critical' ELSE 'forgotten' END)"
    )


def next_transition(
    anchor_sql: str,
    anchor_at_sql: str,
    rate_sql: str,
    strength_sql: str,
    d: DecaySettings,
    *,
    policy_sql: str = "m.decay_policy",
    scale_sql: str = "m.decay_scale",
    shape_sql: str = "m.decay_shape",
) -> str:
    """When the strength next falls below a band boundary: closed form, so the scan can skip the rest.

    NULL once forgotten (the archival step finds those by band) or when the memory never decays.
    """
    boundary = (
        f"(CASE WHEN {strength_sql} > {d.band_strong} THEN {d.band_strong}"
        f" WHEN {strength_sql} >= {d.band_fading} THEN {d.band_fading}"
        f" WHEN {strength_sql} >= {_forgotten_below(policy_sql, d)} THEN {_forgotten_below(policy_sql, d)} END)"
    )
    anchor = f"GREATEST({anchor_sql}, 1e-9)"
    exponential = (
        f"CASE WHEN {rate_sql} <= 0 THEN NULL"
        f" ELSE {anchor_at_sql} + (ln({boundary} / {anchor}) / ln(1.0 - {rate_sql})) * interval '1 day' END"
    )
    weibull = (
        f"CASE WHEN {scale_sql} IS NULL OR {scale_sql} <= 0 THEN NULL"
        f" ELSE {anchor_at_sql} + ({scale_sql} * power(GREATEST(ln({anchor} / {boundary}), 0),"
        f" 1.0 / {shape_sql})) * interval '1 day' END"
    )
    return (
        f"(CASE WHEN {boundary} IS NULL THEN NULL WHEN {policy_sql} = 'weibull' THEN {weibull} ELSE {exponential} END)"
    )
