import math
from datetime import UTC, datetime, timedelta

import pytest
from contextos.config import DecaySettings
from contextos.decay import (
    StrengthState,
    band_of,
    days_until,
    decay_rate,
    next_boundary,
    next_transition_at,
    recency,
    reinforce,
    strength_at,
    weibull_scale,
    weibull_strength_at,
)
from contextos.models import Band

D = DecaySettings()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("importance", "rate"), [(10, 0.10), (8, 0.10), (7, 0.15), (5, 0.15), (4, 0.20), (1, 0.20)])
def test_decay_rate_follows_the_importance_bands(importance, rate):
    assert decay_rate(importance, "problem", D) == pytest.approx(rate)


def test_decay_rate_is_scaled_by_memory_type():
    assert decay_rate(9, "fact", D) == pytest.approx(0.10 * 0.5)
    assert decay_rate(3, "event", D) == pytest.approx(0.20 * 1.5)


def test_strength_after_ten_days_matches_the_hand_computed_value():
    # 1.0 · (1 − 0.15)^10 = 0.196874…
    assert strength_at(1.0, T0, T0 + timedelta(days=10), 0.15) == pytest.approx(0.19687440434072)


def test_strength_is_exact_at_fractional_days_and_never_grows_backwards_in_time():
    assert strength_at(0.8, T0, T0 + timedelta(hours=12), 0.2) == pytest.approx(0.8 * 0.8**0.5)
    assert strength_at(0.8, T0, T0 - timedelta(days=3), 0.2) == pytest.approx(0.8)


def test_reinforcement_is_seventy_percent_kept_plus_thirty():
    assert reinforce(0.5, D) == pytest.approx(0.65)
    assert reinforce(1.0, D) == pytest.approx(1.0)
    assert reinforce(0.0, D) == pytest.approx(0.3)


@pytest.mark.parametrize(
    ("strength", "band"),
    [
        (0.71, Band.strong),
        (0.70, Band.fading),
        (0.40, Band.fading),
        (0.39, Band.critical),
        (0.10, Band.critical),
        (0.09, Band.forgotten),
    ],
)
def test_bands_have_the_spec_boundaries(strength, band):
    assert band_of(strength, D) is band


def test_days_until_a_boundary_inverts_the_decay_formula():
    days = days_until(1.0, 0.7, 0.15)
    assert strength_at(1.0, T0, T0 + timedelta(days=days), 0.15) == pytest.approx(0.7)
    assert days_until(0.5, 0.7, 0.15) == 0.0


def test_recency_is_exponential_in_hours():
    assert recency(0, 0.1) == 1.0
    assert recency(10, 0.1) == pytest.approx(0.36787944117)


# -- the Weibull policy (S5): freshness = exp(−(days/η)^0.8), η = 7 · min(1 + 0.5 · accesses, 5) ----------


@pytest.mark.parametrize(("accesses", "scale"), [(0, 7.0), (1, 10.5), (2, 14.0), (8, 35.0), (50, 35.0)])
def test_weibull_scale_grows_with_accesses_up_to_five_times(accesses, scale):
    assert weibull_scale(accesses, D.weibull) == pytest.approx(scale)


def test_weibull_strength_matches_hand_computed_values():
    # exp(−(7/7)^0.8) = e^−1; exp(−(14/7)^0.8) = exp(−1.741101) = 0.175327
    assert weibull_strength_at(1.0, T0, T0 + timedelta(days=7), 7.0, 0.8) == pytest.approx(0.36787944117)
    assert weibull_strength_at(1.0, T0, T0 + timedelta(days=14), 7.0, 0.8) == pytest.approx(0.17532723680)
    # a reinforced memory (η = 14 after two accesses), 3 days after a re-anchor at 1.0: exp(−(3/14)^0.8)
    assert weibull_strength_at(1.0, T0, T0 + timedelta(days=3), 14.0, 0.8) == pytest.approx(0.74706376399)
    assert weibull_strength_at(0.5, T0, T0 - timedelta(days=1), 7.0, 0.8) == pytest.approx(0.5)


def test_a_strength_state_computes_either_policy_exactly():
    exponential = StrengthState(anchor=0.8, anchor_at=T0, policy="exponential", rate=0.10)
    weibull = StrengthState(anchor=1.0, anchor_at=T0, policy="weibull", scale_days=7.0, shape=0.8)
    assert exponential.at(T0 + timedelta(days=10)) == pytest.approx(0.8 * 0.9**10)  # 0.278943
    assert weibull.at(T0 + timedelta(days=7)) == pytest.approx(math.exp(-1))


def test_weibull_forgets_below_its_own_threshold():
    # "archive below 0.15": 0.12 is forgotten under Weibull, still critical under the exponential policy
    assert band_of(0.12, D, "weibull") is Band.forgotten
    assert band_of(0.12, D, "exponential") is Band.critical
    assert band_of(0.15, D, "weibull") is Band.critical


def test_next_transition_is_when_the_closed_form_crosses_the_next_boundary():
    def days(state: StrengthState, now: datetime) -> float:
        return (next_transition_at(state, now, D) - T0).total_seconds() / 86400

    # exponential: strong 0.8 leaves strong at 0.8 · 0.9^d = 0.7 → d = ln(0.875)/ln(0.9) = 1.267376 days;
    # fading 0.6 leaves fading at 0.6 · 0.9^d = 0.4 → d = ln(2/3)/ln(0.9) = 3.848359 days
    strong = StrengthState(anchor=0.8, anchor_at=T0, policy="exponential", rate=0.10)
    assert days(strong, T0) == pytest.approx(1.267376035)
    fading = StrengthState(anchor=0.6, anchor_at=T0, policy="exponential", rate=0.10)
    assert days(fading, T0) == pytest.approx(3.848359184)
    # Weibull, η = 7: strong until 7·ln(1/0.7)^1.25 = 1.929473 days; forgotten at 7·ln(1/0.15)^1.25 = 15.585349
    weibull = StrengthState(anchor=1.0, anchor_at=T0, policy="weibull", scale_days=7.0, shape=0.8)
    assert days(weibull, T0) == pytest.approx(1.929473384)
    assert days(weibull, T0 + timedelta(days=15)) == pytest.approx(15.585349253)
    assert next_transition_at(weibull, T0 + timedelta(days=16), D) is None  # forgotten: nothing further


def test_next_boundary_follows_the_bands_of_the_policy():
    assert next_boundary(0.9, D) == 0.70
    assert next_boundary(0.5, D) == 0.40
    assert next_boundary(0.3, D) == 0.10
    assert next_boundary(0.3, D, "weibull") == 0.15
    assert next_boundary(0.05, D) is None
