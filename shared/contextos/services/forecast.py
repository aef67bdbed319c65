"""The forgetting forecast: the store's band counts turned into one series per policy."""

from __future__ import annotations

from datetime import timedelta
from uuid import UUID

from contextos.config import DecaySettings
from contextos.decay import StrengthState, band_of
from contextos.errors import NotFound
from contextos.forecast_models import (
    BandCrossing,
    BandThresholds,
    CurvePoint,
    Forecast,
    ForecastPoint,
    ForecastQuery,
    ForecastSeries,
    StrengthCurve,
)
from contextos.models import Band
from contextos.ports.reports import ForecastPort


class ForecastService:
    def __init__(self, store: ForecastPort, decay: DecaySettings) -> None:
        self.store = store
        self.decay = decay

    def forecast(self, tenant_id: str, query: ForecastQuery) -> Forecast:
        if query.policy == "exponential" and query.rate is None:
            # no rate given: the one a memory of middle importance decays at under the exponential policy
            query = query.model_copy(update={"rate": self.decay.rate_mid_importance})
        days = list(range(0, query.days + 1, query.step))
        if days[-1] != query.days:
            days.append(query.days)
        now, rows = self.store.band_counts(tenant_id, days=days, policy=query.policy, rate=query.rate)
        current = {d: ForecastPoint(day=d, at=now + timedelta(days=d)) for d in days}
        alternative = {d: ForecastPoint(day=d, at=now + timedelta(days=d)) for d in days}
        for day, now_band, alt_band, n in rows:  # one row per (day, band, band): a few dozen at most
            for points, band in ((current, now_band), (alternative, alt_band)):
                point = points[day]
                setattr(point, Band(band).value, getattr(point, band) + n)
                point.total += n
        memories = current[0].total
        w = self.decay.weibull
        described = (
            f"Weibull for every memory: exp(−(days/η)^{w.shape}), η = {w.scale_base_days}·min(1 + "
            f"{w.scale_access_step}·accesses, {w.scale_cap}) days; forgotten below {w.archive_below}"
            if query.policy == "weibull"
            else f"exponential for every memory at λ = {query.rate} a day: S·(1 − λ)^days"
        )
        return Forecast(
            memories=memories,
            now=now,
            thresholds=self._thresholds(),
            current=ForecastSeries(
                policy="current",
                description="each memory's own policy and rate as stored, with no further access",
                points=list(current.values()),
            ),
            alternative=ForecastSeries(policy=query.policy, description=described, points=list(alternative.values())),
        )

    def _thresholds(self) -> BandThresholds:
        return BandThresholds(
            strong=self.decay.band_strong,
            fading=self.decay.band_fading,
            forgotten=self.decay.band_forgotten,
            weibull_forgotten=self.decay.weibull.archive_below,
        )

    def curve(self, tenant_id: str, memory_id: UUID, *, days: int = 60, points: int = 61) -> StrengthCurve:
        """The memory's strength from its anchor to ``days`` ahead and the dates it changes band."""
        row = self.store.decay_row(tenant_id, memory_id)
        if row is None:
            raise NotFound(f"memory {memory_id} not found")
        policy = row["decay_policy"]
        weibull = policy == "weibull"
        state = StrengthState(
            anchor=row["strength_anchor"],
            anchor_at=row["strength_anchor_at"],
            policy=policy,
            rate=row["decay_rate"],
            scale_days=row["decay_scale"] or self.decay.weibull.scale_base_days,
            shape=row["decay_shape"] or self.decay.weibull.shape,
        )
        now = row["now"]
        start, end = min(row["created_at"], state.anchor_at), now + timedelta(days=days)
        span = end - start
        samples = [start + span * (i / (points - 1)) for i in range(points)]
        crossings = []
        forgotten_below = self.decay.forgotten_below(policy)
        for band, boundary in (
            ("fading", self.decay.band_strong),
            ("critical", self.decay.band_fading),
            ("forgotten", forgotten_below),
        ):
            to = state.days_to(boundary)
            if to is not None and to > 0:
                crossings.append(BandCrossing(band=band, at=state.anchor_at + timedelta(days=to)))
        strength = state.at(now)
        return StrengthCurve(
            memory_id=str(memory_id),
            state=row["state"],
            forgotten_at=row["forgotten_at"],
            policy=policy,
            rate=None if weibull else state.rate,
            scale_days=state.scale_days if weibull else None,
            shape=state.shape if weibull else None,
            anchor=state.anchor,
            anchored_at=state.anchor_at,
            created_at=row["created_at"],
            now=now,
            strength_now=strength,
            band_now=band_of(strength, self.decay, policy).value,
            thresholds=self._thresholds(),
            # before the anchor the row keeps no history: the anchor strength is drawn flat
            points=[CurvePoint(at=t, strength=state.anchor if t < state.anchor_at else state.at(t)) for t in samples],
            crossings=crossings,
        )
