"""The forgetting forecast (S15): how many memories each band will hold over the next days.

Pure models: the store counts bands in SQL with the decay module's closed forms; these carry
the counts, the dates and the thresholds the console draws.
"""

from datetime import datetime
from typing import Literal

from pydantic import Field

from contextos.modelbase import BaseModel

AlternativePolicy = Literal["weibull", "exponential"]


class ForecastQuery(BaseModel):
    days: int = Field(default=90, ge=1, le=365)
    step: int = Field(default=7, ge=1, le=90)
    policy: AlternativePolicy = "weibull"
    rate: float | None = Field(default=None, gt=0.0, lt=1.0, description="daily λ of the exponential alternative")


class BandThresholds(BaseModel):
    """The strength boundaries between bands (strong > strong; fading ≥ fading; critical ≥ forgotten)."""

    strong: float
    fading: float
    forgotten: float
    weibull_forgotten: float


class ForecastPoint(BaseModel):
    day: int
    at: datetime
    strong: int = 0
    fading: int = 0
    critical: int = 0
    forgotten: int = 0
    total: int = 0


class ForecastSeries(BaseModel):
    policy: str
    description: str
    points: list[ForecastPoint]


class Forecast(BaseModel):
    """Every active memory of the tenant, banded at each day ahead, under the policy each memory
    decays by now and under one alternative applied to all of them; nothing is reinforced."""

    memories: int = Field(description="active memories counted: every point's total equals it")
    now: datetime
    thresholds: BandThresholds
    current: ForecastSeries
    alternative: ForecastSeries


class CurvePoint(BaseModel):
    at: datetime
    strength: float


class BandCrossing(BaseModel):
    """When the strength falls through a band's lower boundary, with no further access."""

    band: str = Field(description="the band it enters")
    at: datetime


class StrengthCurve(BaseModel):
    """One memory's strength from its anchor to ``days`` ahead, by the decay module's closed form:
    the console draws this, it does not re-estimate the policy."""

    memory_id: str
    state: str
    forgotten_at: datetime | None = Field(default=None, description="set when the memory is forgotten (restorable)")
    policy: str
    rate: float | None = None
    scale_days: float | None = None
    shape: float | None = None
    anchor: float
    anchored_at: datetime
    created_at: datetime
    now: datetime
    strength_now: float
    band_now: str
    thresholds: BandThresholds
    points: list[CurvePoint]
    crossings: list[BandCrossing]
