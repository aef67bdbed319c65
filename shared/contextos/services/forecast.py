"""The forgetting forecast: the store's band counts turned into one series per policy."""

from __future__ import annotations

from datetime import timedelta

from contextos.config import DecaySettings
from contextos.errors import BadRequest
from contextos.forecast_models import BandThresholds, Forecast, ForecastPoint, ForecastQuery, ForecastSeries
from contextos.models import Band
from contextos.store.forecast import ForecastStore


class ForecastService:
    def __init__(self, store: ForecastStore, decay: DecaySettings) -> None:
        self.store = store
        self.decay = decay

    def forecast(self, tenant_id: str, query: ForecastQuery) -> Forecast:
        if query.policy == "exponential" and query.rate is None:
            raise BadRequest("an exponential alternative needs its daily rate: give rate (0 < rate < 1)")
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
            thresholds=BandThresholds(
                strong=self.decay.band_strong,
                fading=self.decay.band_fading,
                forgotten=self.decay.band_forgotten,
                weibull_forgotten=w.archive_below,
            ),
            current=ForecastSeries(
                policy="current",
                description="each memory's own policy and rate as stored, with no further access",
                points=list(current.values()),
            ),
            alternative=ForecastSeries(policy=query.policy, description=described, points=list(alternative.values())),
        )
