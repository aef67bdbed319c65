"""Strength, decay, bands and reinforcement (S5): one pure module shared by retrieval and the scan.

Strength is kept as (anchor strength, anchor time); the value at any moment is exact in closed
form, so reads never depend on when the lifecycle scan last ran.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from contextos.config import DecaySettings, WeibullSettings
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


def _days(anchor_at: datetime, now: datetime) -> float:
    return max((now - anchor_at).total_seconds(), 0.0) / SECONDS_PER_DAY


def strength_at(anchor_strength: float, anchor_at: datetime, now: datetime, rate: float) -> float:
    """Exponential policy: S(t) = S0 · (1 − λ)^days since the anchor."""
    return anchor_strength * (1.0 - rate) ** _days(anchor_at, now)


def weibull_scale(access_count: int, w: WeibullSettings) -> float:
    """η = 7 · min(1 + 0.5 · access_count, 5) days: every access stretches the memory's life."""
    return w.scale_base_days * min(1.0 + w.scale_access_step * access_count, w.scale_cap)


def weibull_strength_at(
    anchor_strength: float, anchor_at: datetime, now: datetime, scale_days: float, shape: float
) -> float:
    """Weibull policy: S(t) = S0 · exp(−(days/η)^k) since the anchor."""
    return anchor_strength * math.exp(-((_days(anchor_at, now) / scale_days) ** shape))


@dataclass(frozen=True, slots=True)
class StrengthState:
    """What a memory row keeps: (anchor strength, anchor time) and the parameters of its policy."""

    anchor: float
    anchor_at: datetime
    policy: str = "exponential"
    rate: float = 0.15  # λ per day (exponential)
    scale_days: float = 7.0  # η (Weibull)
    shape: float = 0.8  # k (Weibull)

    def at(self, now: datetime) -> float:
        """The exact strength at ``now``, whenever the scan last ran."""
        if self.policy == "weibull":
            return weibull_strength_at(self.anchor, self.anchor_at, now, self.scale_days, self.shape)
        return strength_at(self.anchor, self.anchor_at, now, self.rate)

    def days_to(self, target: float) -> float | None:
        """Days from the anchor until the strength falls to ``target`` (None if it never does)."""
        if self.anchor <= target:
            return 0.0
        if target <= 0:
            return None
        if self.policy == "weibull":
            return self.scale_days * math.log(self.anchor / target) ** (1.0 / self.shape)
        return days_until(self.anchor, target, self.rate)


def next_boundary(strength: float, settings: DecaySettings, policy: str = "exponential") -> float | None:
    """The band boundary a memory of this strength falls through next (None once forgotten)."""
    if strength > settings.band_strong:
        return settings.band_strong
    if strength >= settings.band_fading:
        return settings.band_fading
    if strength >= settings.forgotten_below(policy):
        return settings.forgotten_below(policy)
    return None


def next_transition_at(state: StrengthState, now: datetime, settings: DecaySettings) -> datetime | None:
    """When the memory next changes band: the scan needs to look at it only then."""
    boundary = next_boundary(state.at(now), settings, state.policy)
    if boundary is None:
        return None
    days = state.days_to(boundary)
    return None if days is None else state.anchor_at + timedelta(days=days)


def reinforce(strength: float, settings: DecaySettings) -> float:
    """S ← 0.7·S + 0.3 when a memory is injected into a real context."""
    keep = settings.reinforce_keep
    return min(1.0, keep * strength + (1.0 - keep))


def band_of(strength: float, settings: DecaySettings, policy: str = "exponential") -> Band:
    """strong > 0.70, fading 0.40–0.70, critical < 0.40, forgotten < 0.10 (Weibull: < 0.15)."""
    if strength > settings.band_strong:
        return Band.strong
    if strength >= settings.band_fading:
        return Band.fading
    if strength >= settings.forgotten_below(policy):
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
