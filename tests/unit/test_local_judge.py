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


def pair(old: str, new: str, old_label: str | None = None, new_label: str | None = None, similarity: float = 0.9):
    from contextos.judge import JudgePair

    return JudgePair(
        premise=old, hypothesis=new, similarity=similarity, premise_subject=old_label, hypothesis_subject=new_label
    )


@pytest.mark.parametrize(
    ("old_label", "new_label"), [("Payments timeout", "Search timeout"), (None, None), ("Service timeout", None)]
)
def test_a_timeout_of_another_service_supersedes_nothing(old_label, new_label):
    judgement = JUDGE.judge_pair(
        pair(
            "The payments service times out after 30 seconds.",
            "The search service times out after 60 seconds.",
            old_label,
            new_label,
            similarity=0.95,
        )
    )
    assert judgement.verdict is Verdict.neutral


def test_labels_that_name_different_subjects_keep_same_shaped_statements_apart():
    old, new = "The service times out after 30 seconds.", "The service times out after 60 seconds."
    assert JUDGE.judge_pair(pair(old, new, "Payments timeout", "Search timeout")).verdict is Verdict.neutral
    assert JUDGE.judge_pair(pair(old, new, "Payments timeout", "Payments timeout")).verdict is Verdict.contradiction


def test_the_store_form_label_colon_definition_gives_the_subject():
    verdict = JUDGE.judge(
        "Release 2.0: Release 2.0 ships in May.", "Release 3.0: Release 3.0 ships in June.", similarity=0.9
    ).verdict
    assert verdict is Verdict.neutral
    assert (
        JUDGE.judge(
            "Release 2.0: The release ships in May.", "Release 2.0: The release ships in June.", similarity=0.9
        ).verdict
        is Verdict.contradiction
    )


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The maintenance window starts before the backup.", "The maintenance window starts after the backup."),
        ("The office lights switch on at night.", "The office lights switch off at night."),
        ("Traffic scales up during the sale.", "Traffic scales down during the sale."),
    ],
)
def test_bare_function_word_opposites_decide_nothing(old, new):
    assert JUDGE.judge_pair(pair(old, new)).verdict is not Verdict.contradiction


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The primary database is PostgreSQL.", "The primary database is MySQL."),
        ("The search index is hosted in Frankfurt.", "The search index is hosted in Dublin."),
        ("Always use TLS between services.", "Never use TLS between services."),
        ("The launch is on March 3, 2027.", "The launch is on March 10, 2027."),
    ],
)
def test_contradictions_about_one_subject(old, new):
    assert JUDGE.judge_pair(pair(old, new)).verdict is Verdict.contradiction


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("Alice is allergic to peanuts.", "Alice is allergic to shellfish."),  # both can hold
        ("Dark mode is enabled for Alice.", "Dark mode is disabled for Bob."),
        ("The API listens on port 8080.", "The API listens on ports 8080 and 9090."),  # an addition
    ],
)
def test_statements_that_can_both_hold_are_not_contradictions(old, new):
    assert JUDGE.judge_pair(pair(old, new)).verdict is not Verdict.contradiction


def test_judge_many_answers_every_pair_in_order():
    pairs = [
        pair("The API listens on port 8080.", "The API listens on port 9090."),
        pair("Alice uses vim.", "The database is PostgreSQL.", similarity=0.2),
        pair("Deploys happen on Fridays.", "Deploys happen on Fridays.", similarity=0.97),
    ]
    assert [j.verdict for j in JUDGE.judge_many(pairs)] == [Verdict.contradiction, Verdict.neutral, Verdict.entailment]
    assert JUDGE.judge_many([]) == []


def test_a_statement_repeating_one_sentence_of_the_older_never_denies_it():
    from contextos.judge import JudgePair

    older = "We decided to use feature flags for risky changes. Feature flags let us disable a change without a deploy."
    verdict = (
        LocalHeuristicJudge()
        .judge_pair(
            JudgePair(
                premise=f"Feature flags: {older}",
                hypothesis="Risky changes: We decided to use feature flags for risky changes.",
                similarity=0.9,
                premise_subject="Feature flags",
                hypothesis_subject="Risky changes",
            )
        )
        .verdict
    )
    assert verdict is Verdict.entailment
