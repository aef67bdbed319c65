import pytest
from contextos.judge import Verdict
from contextos.judge.local import LocalHeuristicJudge

JUDGE = LocalHeuristicJudge()


@pytest.mark.parametrize(
    ("old", "new", "verdict"),
    [
        ("The API listens on port 8080.", "The API listens on port 9090.", Verdict.contradiction),
        ("Dark mode is enabled for Alice.", "Dark mode is disabled for Alice.", Verdict.contradiction),
        ("Bob likes tea.", "Bob does not like tea.", Verdict.contradiction),
        ("Deploys happen on Fridays.", "Deploys happen on Fridays.", Verdict.entailment),
        ("Alice uses vim.", "The database is PostgreSQL.", Verdict.neutral),
    ],
)
def test_local_judge_heuristics(old, new, verdict):
    similarity = 0.95 if verdict is not Verdict.neutral else 0.2
    assert JUDGE.judge(old, new, similarity=similarity).verdict is verdict


def test_dissimilar_statements_are_neutral_whatever_their_words():
    assert JUDGE.judge("X is enabled.", "Y is disabled.", similarity=0.3).verdict is Verdict.neutral


def test_a_sentence_final_period_does_not_make_a_different_word():
    from contextos.judge.local import LocalHeuristicJudge

    judgement = LocalHeuristicJudge().judge(
        "The staging database runs PostgreSQL on a single node in Frankfurt.",
        "The staging database runs PostgreSQL on a single node.",
        similarity=0.88,
    )
    assert judgement.verdict.value == "entailment"
    assert (
        LocalHeuristicJudge().judge("The version is 3.5 now.", "The version is 3.6 now.", similarity=0.95).verdict.value
        == "contradiction"
    )
