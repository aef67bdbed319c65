from datetime import UTC, datetime, timedelta

import pytest
from contextos.config import DecaySettings
from contextos.decay import band_of, days_until, decay_rate, recency, reinforce, strength_at
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
