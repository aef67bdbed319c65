"""Band counts days ahead, in one set-based statement: every active memory × every day asked,
strength by the same closed forms as ``contextos.decay``, grouped in SQL."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from uuid import UUID

from contextos.config import DecaySettings
from contextos.store.db import Database
from contextos.store.sql import band_case, exponential_strength, weibull_scale, weibull_strength


def _days_ahead(alias: str) -> str:
    return f"(GREATEST(extract(epoch FROM (now() - {alias}.strength_anchor_at)), 0) / 86400.0 + d.day)"


class ForecastStore:
    def __init__(self, db: Database, decay: DecaySettings) -> None:
        self.db = db
        self.decay = decay

    def band_counts(
        self, tenant_id: str, *, days: list[int], policy: str, rate: float | None
    ) -> tuple[datetime, list[tuple[int, str, str, int]]]:
        """(now, rows of (day, band under each row's own policy, band under ``policy``, count))."""
        t = _days_ahead("m")
        current = (
            "(CASE WHEN m.decay_policy = 'weibull'"
            f" THEN {weibull_strength('m.strength_anchor', 'm.decay_scale', 'm.decay_shape', t)}"
            f" ELSE {exponential_strength('m.strength_anchor', 'm.decay_rate', t)} END)"
        )
        if policy == "weibull":
            scale = weibull_scale("m.access_count", self.decay)
            alternative = f"({weibull_strength('m.strength_anchor', scale, '%(shape)s', t)})"
        else:
            alternative = f"({exponential_strength('m.strength_anchor', '%(rate)s', t)})"
        rows = self.db.tenant_read(
            tenant_id,
            (
                f"""SELECT d.day, {band_case(current, self.decay)} AS now_band,
                           {band_case(alternative, self.decay, f"'{policy}'")} AS alt_band,
                           count(*) AS n, now() AS at
                    FROM unnest(%(days)s::int[]) AS d(day)
                    CROSS JOIN memories m
                    WHERE m.tenant_id = %(tenant)s AND m.state = 'active' AND m.forgotten_at IS NULL
                    GROUP BY d.day, now_band, alt_band""",
                {
                    "tenant": tenant_id,
                    "days": days,
                    "shape": self.decay.weibull.shape,
                    "rate": rate,
                },
            ),
        )
        now = rows[0]["at"] if rows else datetime.now(UTC)  # no memories: nothing to date by the database
        return now, [(r["day"], r["now_band"], r["alt_band"], r["n"]) for r in rows]

    def decay_row(self, tenant_id: str, memory_id: UUID) -> dict[str, Any] | None:
        """A memory's decay anchors and policy parameters, its state, and the database's now (a
        forgotten memory too: its owner may restore it)."""
        rows = self.db.tenant_read(
            tenant_id,
            (
                """SELECT strength_anchor, strength_anchor_at, decay_policy, decay_rate, decay_scale, decay_shape,
                          created_at, state, forgotten_at, now() AS now
                   FROM memories WHERE tenant_id = %(tenant)s AND id = %(id)s""",
                {"tenant": tenant_id, "id": memory_id},
            ),
        )
        return rows[0] if rows else None
