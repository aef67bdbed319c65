"""S9 health score: each component and the weighted total, pinned on hand-computed inputs."""

import math

import pytest
from contextos.config import ReportSettings
from contextos.reports import HealthInputs, efficiency_score, health_components, health_score, type_balance

CFG = ReportSettings()


def by_name(inputs: HealthInputs) -> dict:
    return {c.name: c for c in health_components(inputs, CFG)}


def test_given_hand_counted_inputs_when_scored_then_each_component_and_the_total_match_the_formula():
    inputs = HealthInputs(
        active_memories=10,
        used_memories=4,
        queries=3,
        mean_utilization=0.9,
        mean_strength=0.6,
        type_counts={"fact": 5, "event": 5},
        flagged_memories=2,
    )
    components = by_name(inputs)
    assert components["coverage"].score == pytest.approx(0.4)
    assert components["efficiency"].score == pytest.approx(0.75)  # 1 - 0.5 * (0.9 - 0.8) / 0.2
    assert components["freshness"].score == pytest.approx(0.6)
    assert components["balance"].score == pytest.approx(math.log(2) / math.log(7))  # 0.3562
    assert components["cleanliness"].score == pytest.approx(0.8)
    # 100 * (0.25*0.4 + 0.25*0.75 + 0.20*0.6 + 0.15*0.3562 + 0.15*0.8) = 58.09
    assert health_score(list(components.values())) == pytest.approx(58.09, abs=0.005)
    assert components["coverage"].inputs == {"active_memories": 10, "used_memories": 4}
    assert [c.weight for c in components.values()] == [0.25, 0.25, 0.20, 0.15, 0.15]


@pytest.mark.parametrize(
    ("utilization", "expected"),
    [(0.0, 0.0), (0.25, 0.5), (0.5, 1.0), (0.65, 1.0), (0.8, 1.0), (0.9, 0.75), (1.0, 0.5), (1.7, 0.5)],
)
def test_efficiency_is_full_inside_the_ideal_band_and_falls_linearly_outside(utilization, expected):
    assert efficiency_score(utilization, CFG) == pytest.approx(expected)


def test_balance_is_the_normalized_entropy_over_the_configured_types():
    assert type_balance({}, CFG) is None
    assert type_balance({"fact": 12}, CFG) == 0.0
    assert type_balance({t: 3 for t in CFG.balance_types}, CFG) == pytest.approx(1.0)
    eight = {f"type{i}": 1 for i in range(8)}  # more types present than configured: K = 8
    assert type_balance(eight, CFG) == pytest.approx(1.0)
    skewed = {"fact": 9, "event": 1}
    h = -(0.9 * math.log(0.9) + 0.1 * math.log(0.1))
    assert type_balance(skewed, CFG) == pytest.approx(h / math.log(7))


def test_components_without_data_are_null_and_the_total_is_renormalized_over_the_rest():
    inputs = HealthInputs(
        active_memories=10, used_memories=4, mean_strength=0.6, type_counts={"fact": 5, "event": 5}, flagged_memories=2
    )
    components = by_name(inputs)
    assert components["efficiency"].score is None  # no context queries in the window
    expected = 100 * (0.25 * 0.4 + 0.20 * 0.6 + 0.15 * math.log(2) / math.log(7) + 0.15 * 0.8) / 0.75
    assert health_score(list(components.values())) == pytest.approx(expected, abs=0.005)


def test_an_empty_store_has_no_score_rather_than_a_misleading_one():
    components = health_components(HealthInputs(), CFG)
    assert all(c.score is None for c in components)
    assert health_score(components) is None


def test_without_a_governance_report_cleanliness_is_unknown_not_perfect():
    components = by_name(HealthInputs(active_memories=3, used_memories=3, mean_strength=1.0, type_counts={"fact": 3}))
    assert components["cleanliness"].score is None
