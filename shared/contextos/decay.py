"""Strength, decay, bands and reinforcement (S5): one pure module shared by retrieval and the scan.

Strength is kept as (anchor strength, anchor time); the value at any moment is exact in closed
form, so reads never depend on when the lifecycle scan last ran.
"""

from __future__ import annotations

import math
from datetime import datetime

from contextos.config import DecaySettings
from contextos.models import Band

SECONDS_PER_DAY = 86_400.0


def decay_rate(importance: int, memory_type: str, settings: DecaySettings) -> float:
    """Daily λ of the exponential policy: by importance, scaled by the memory type."""
    if importance >= 8:
        base = settings.rate_high_importance
    elif importance >= 5:
        base = settings.rate_mid_importance
    else:
        base = settings.rate_low_importance
    rate = base * settings.type_multipliers.get(memory_type, 1.0)
    return min(max(rate, 0.0), 0.99)


def strength_at(anchor_strength: float, anchor_at: datetime, now: datetime, rate: float) -> float:
    """S(t) = S0 · (1 − λ)^days since the anchor."""
    days = max((now - anchor_at).total_seconds(), 0.0) / SECONDS_PER_DAY
    return anchor_strength * (1.0 - rate) ** days


def reinforce(strength: float, settings: DecaySettings) -> float:
    """S ← 0.7·S + 0.3 when a memory is injected into a real context."""
    keep = settings.reinforce_keep
    return min(1.0, keep * strength + (1.0 - keep))


def band_of(strength: float, settings: DecaySettings) -> Band:
    if strength > settings.band_strong:
        return Band.strong
    if strength >= settings.band_fading:
        return Band.fading
    if strength >= settings.band_forgotten:
        return Band.critical
    return Band.forgotten


def days_until(anchor_strength: float, target: float, rate: float) -> float | None:
    """Days from the anchor until strength falls to ``target`` (None if it never does)."""
    if anchor_strength <= target:
        return 0.0
    if target <= 0 or rate <= 0:
        return None
    return math.log(target / anchor_strength) / math.log(1.0 - rate)


def recency(hours_since_access: float, rate_per_hour: float) -> float:
    """recency = e^(−0.1 · hours since last access) (S6.4)."""
    return math.exp(-rate_per_hour * max(hours_since_access, 0.0))
