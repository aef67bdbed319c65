import pytest
from contextos.conversations import TurnConcept
from contextos.extraction.validation import rejection_reason, validate
from contextos.models import Concept

GOOD_DEFINITION = "Blue-green deployment keeps two environments so traffic can switch back instantly on failure."
MODIFIERS = ["system", "approach", "method"]


def concept(label: str, definition: str = GOOD_DEFINITION, **kw) -> Concept:
    return Concept(label=label, definition=definition, **kw)


@pytest.mark.parametrize(
    ("label", "reason"),
    [
        ("", "empty_label"),
        ("   ", "empty_label"),
        ("a label that has far too many words", "label_too_long"),
        ("Deploys are fast.", "label_is_sentence"),
        ("The router is always green", "label_is_sentence"),
        ("Deployment of", "label_ends_with_connector"),
        ("Rollback and", "label_ends_with_connector"),
        ("Introduction", "structural_label"),
        ("Chapter 3", "structural_label"),
        ("Table 2.1", "structural_label"),
        ("Summary and Conclusions", "structural_label"),
    ],
)
def test_each_label_rule_rejects_with_its_own_reason(label, reason):
    assert rejection_reason(concept(label), min_definition_chars=30) == reason


def test_unknown_types_are_rejected():
    assert rejection_reason(concept("Blue-green deployment", type="opinion"), min_definition_chars=30) == "unknown_type"


def test_short_definitions_are_rejected():
    assert rejection_reason(concept("Blue-green deployment", "Too short."), min_definition_chars=30) == (
        "definition_too_short"
    )


def test_definitions_that_only_restate_the_label_are_rejected():
    c = concept("Blue green deployment strategy", "Blue green deployment strategy is a deployment strategy.")
    assert rejection_reason(c, min_definition_chars=10) == "definition_restates_label"


def test_a_good_concept_passes():
    assert rejection_reason(concept("Blue-green deployment"), min_definition_chars=30) is None


def test_validate_counts_rejections_clamps_importance_and_drops_duplicates_and_unknown_related():
    report = validate(
        [
            concept("Blue-green deployment", importance=14, related=["Rollback plan", "Canary release", "Ghost"]),
            concept("Deployment, blue green", importance=3),  # same normalized key
            concept("Rollback plan", importance=-2, related=["Blue-green deployment"]),
            concept("Introduction"),
            concept(""),
        ],
        min_definition_chars=30,
        generic_modifiers=MODIFIERS,
    )
    assert [c.label for c in report.accepted] == ["Blue-green deployment", "Rollback plan"]
    assert [c.importance for c in report.accepted] == [10, 1]
    assert report.rejected == {"duplicate_label": 1, "structural_label": 1, "empty_label": 1}
    assert report.rejected_total == 3
    assert report.accepted[0].related == ["Rollback plan"]
    assert report.dropped_related == 2


def test_a_stated_fact_may_be_one_short_sentence_a_concept_may_not():
    fact = TurnConcept(label="Priya dietary need", definition="Priya is vegetarian.", type="fact", fact=True)
    assert rejection_reason(fact, min_definition_chars=30) is None
    assert rejection_reason(fact.model_copy(update={"fact": False}), min_definition_chars=30) == "definition_too_short"
    assert rejection_reason(fact.model_copy(update={"definition": "Vegan."}), min_definition_chars=30) == (
        "definition_too_short"
    )
