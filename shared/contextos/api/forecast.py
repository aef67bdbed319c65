"""/v1/forecast (S15): memories per band over the next days, under the current and another policy."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from aws_lambda_powertools.event_handler.api_gateway import Router
from aws_lambda_powertools.event_handler.openapi.params import Path, Query

from contextos import container
from contextos.api.auth import Verb, require
from contextos.forecast_models import AlternativePolicy, Forecast, ForecastQuery, StrengthCurve

router = Router()


@router.get("/forecast", summary="Memories per band over the next N days, current policy vs an alternative")
def get_forecast(
    days: Annotated[int, Query(ge=1, le=365)] = 90,
    step: Annotated[int, Query(ge=1, le=90)] = 7,
    policy: Annotated[AlternativePolicy, Query()] = "weibull",
    rate: Annotated[
        float | None,
        Query(
            gt=0.0,
            lt=1.0,
            description="λ a day, for policy=exponential (default: the rate of a memory of middle importance)",
        ),
    ] = None,
) -> Forecast:
    query = ForecastQuery(days=days, step=step, policy=policy, rate=rate)
    return container.forecast().forecast(require(router, Verb.read).tenant_id, query)


@router.get("/forecast/memories/<memory_id>", summary="A memory's strength curve, band thresholds and crossing dates")
def get_strength_curve(
    memory_id: Annotated[UUID, Path()], days: Annotated[int, Query(ge=1, le=365)] = 60
) -> StrengthCurve:
    return container.forecast().curve(require(router, Verb.read).tenant_id, memory_id, days=days)
