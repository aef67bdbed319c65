"""The merge planner (S4 step 7) on its own: which memory each candidate joins, and why, without a database."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID, uuid4

import pytest
from contextos.merge_plan import (
    GateCounts,
    LookupRow,
    NearRow,
    admission_counts,
    merge_targets,
    nearest_by_candidate,
    one_per_key,
    order_lookup_rows,
    related_pairs,
    source_texts,
    store_result,
)
from contextos.models import MemoryCandidate, Provenance


def candidate(key: str, label: str, definition: str = "a definition", **extra) -> MemoryCandidate:
    fields = {
        "norm_key": key,
        "label": label,
        "definition": definition,
        "type": "fact",
        "importance": 3,
        "embedding": [0.0, 1.0],
        "decay_rate": 0.01,
        "provenance": Provenance.user_upload,
        "base_trust": 0.9,
    }
    return MemoryCandidate(**(fields | extra))


def exact(key: str) -> LookupRow:
    return {"exact": True, "norm_key": key, "initials": None, "acronyms": None, "importance": 0, "created_at": None}


def pair_row(
    key: str,
    *,
    initials: str | None = None,
    acronyms: list[str] | None = None,
    importance: int = 3,
    created_at: datetime | None = None,
    type: str = "fact",
    label: str | None = None,
    definition: str = "",
) -> LookupRow:
    return {
        "label": label if label is not None else key,
        "definition": definition,
        "exact": False,
        "norm_key": key,
        "initials": initials,
        "acronyms": acronyms or [],
        "importance": importance,
        "created_at": created_at,
        "type": type,
    }


def test_a_candidate_whose_key_exists_merges_by_key_and_needs_no_target():
    plan = merge_targets([candidate("kafka", "Kafka")], [exact("kafka")], {0: "other"})
    assert plan.merge_into == {} and plan.final_keys == ["kafka"]


def test_an_acronym_pair_wins_over_a_near_duplicate():
    cands = [candidate("grpo", "GRPO", "GRPO (group relative policy optimization) needs a group of completions.")]
    rows = [pair_row("group relative policy optimization", initials="grpo")]
    plan = merge_targets(cands, rows, {0: "reinforcement learning"})
    assert plan.merge_into == {0: "group relative policy optimization"}
    assert plan.reasons == {0: "acronym"}


def test_the_expanded_label_joins_the_memory_named_by_its_acronym():
    long_form = "Group Relative Policy Optimization (GRPO) compares groups of sampled answers."
    cands = [candidate("group relative policy optimization", "Group Relative Policy Optimization", long_form)]
    plan = merge_targets(cands, [pair_row("grpo", acronyms=["grpo"], label="GRPO")], {})
    assert plan.merge_into == {0: "grpo"} and plan.reasons == {0: "acronym"}


def test_the_acronyms_memory_spelling_the_long_form_out_is_evidence_too():
    cands = [candidate("command line interface", "Command Line Interface", "Commands typed in a terminal.")]
    row = pair_row("cli", acronyms=["cli"], label="CLI", definition="Read about the CLI (command-line interface).")
    assert merge_targets(cands, [row], {}).merge_into == {0: "cli"}


@pytest.mark.parametrize(
    ("short_label", "long_label", "long_text"),
    [
        ("CLI guide", "Command Line Interface", "A terminal CLI for indexing."),  # a guide, not the CLI
        ("AI tools", "AI Instructions", "Instructions for AI agents."),  # "AI Instructions" is no expansion of AI
    ],
)
def test_an_acronym_joins_only_as_the_whole_label_and_only_an_expansion(short_label, long_label, long_text):
    short = candidate(short_label.lower(), short_label, f"The {short_label} ({long_label.lower()}).")
    long_row = pair_row(long_label.lower(), initials="".join(w[0] for w in long_label.split()).lower())
    long_row |= {"label": long_label, "definition": long_text}
    assert merge_targets([short], [long_row], {}).merge_into == {}


@pytest.mark.parametrize(
    ("long_label", "long_text", "short_label", "short_text"),
    [
        # #41, drawn from installed packages' READMEs: the letters pair, nothing says they are one thing
        ("Attrs instances", "Pass attrs instances as well as classes.", "AI", "Two interfaces for AI agents."),
        ("Amazon Web Services", "Published by Amazon Web Services.", "AWS CLI", "Botocore is under the AWS CLI."),
        ("Never log secrets", "Never write tokens to a log.", "NLS", "Native language support: translations."),
    ],
)
def test_letters_alone_never_join_an_acronym_to_a_long_form(long_label, long_text, short_label, short_text):
    long_form = candidate(long_label.lower(), long_label, long_text)
    short_row = pair_row(short_label.lower(), acronyms=[a.lower() for a in short_label.split() if a.isupper()])
    short_row |= {"label": short_label, "definition": short_text}
    assert merge_targets([long_form], [short_row], {}).merge_into == {}
    short = candidate(short_label.lower(), short_label, short_text)
    long_row = pair_row(long_label.lower(), initials="".join(w[0] for w in long_label.split()).lower())
    long_row |= {"label": long_label, "definition": long_text}
    assert merge_targets([short], [long_row], {}).merge_into == {}


def test_a_rule_never_joins_an_entity_named_by_its_initials():
    # "Never log secrets" spells N-L-S: the entity "NLS" (native language support) is another thing
    cands = [candidate("never log secrets", "Never log secrets", type="rule")]
    plan = merge_targets(cands, [pair_row("nls", acronyms=["nls"], type="entity")], {})
    assert plan.merge_into == {}


def test_a_rule_never_joins_another_memory_by_acronym_or_vector():
    cands = [candidate("never log secrets", "Never log secrets", type="rule")]
    plan = merge_targets(cands, [pair_row("nls", acronyms=["nls"], type="rule")], {0: "log hygiene"})
    assert plan.merge_into == {}


def test_a_kept_turn_joins_nothing_and_nothing_joins_it():
    # what was said is kept as said (S8): a turn is never a near duplicate nor an acronym's long form
    turn = candidate("said:0a1b2c3d4e5f6a7b:4", "Turn 4 of chat", type="event")
    assert merge_targets([turn], [pair_row("tfc", acronyms=["tfc"], type="event")], {0: "standup"}).merge_into == {}
    fact = candidate("standup", "Standup")
    assert merge_targets([fact], [], {0: "said:0a1b2c3d4e5f6a7b:4"}).merge_into == {}
    rows: list[NearRow] = [
        {"idx": 0, "norm_key": "said:0a1b2c3d4e5f6a7b:4", "similarity": 0.99},
        {"idx": 1, "norm_key": "standup meeting", "similarity": 0.99},
    ]
    nearest = nearest_by_candidate([fact, turn], rows)
    assert nearest == {}


def test_an_acronym_pair_of_two_types_stands_apart():
    cands = [candidate("grpo", "GRPO", type="entity")]
    plan = merge_targets(cands, [pair_row("group relative policy optimization", initials="grpo", type="skill")], {})
    assert plan.merge_into == {}


def test_an_acronym_never_merges_across_owners():
    cands = [candidate("grpo@user:ann", "GRPO")]
    plan = merge_targets(cands, [pair_row("group relative policy optimization@user:bob", initials="grpo")], {})
    assert plan.merge_into == {}


def test_a_near_duplicate_counts_only_for_what_is_still_unmatched():
    cands = [candidate("a", "Alpha"), candidate("b", "Beta")]
    plan = merge_targets(cands, [exact("a")], {0: "x", 1: "y"})
    assert plan.merge_into == {1: "y"} and plan.reasons == {1: "near_duplicate"}
    assert plan.final_keys == ["a", "y"]
    assert plan.merge_counts() == {"near_duplicate": 1}


def test_the_nearest_near_duplicate_of_each_candidate_is_kept():
    rows: list[NearRow] = [
        {"idx": 0, "norm_key": "far", "similarity": 0.91},
        {"idx": 0, "norm_key": "near", "similarity": 0.97},
        {"idx": 1, "norm_key": "only", "similarity": 0.93},
    ]
    wanted = [candidate("near far", "Near far"), candidate("only one", "Only one")]
    assert nearest_by_candidate(wanted, rows) == {0: "near", 1: "only"}


@pytest.mark.parametrize(
    ("candidate_keys", "rows", "expected"),
    [
        pytest.param(  # LoCoMo's conversation path: two people, two venues named in one sentence embed alike
            ["jolene", "hey jolene", "anna@u=u-1", "of stage the"],
            [(0, "anna", 0.96), (1, "jolene", 0.95), (2, "jolene@u=u-1", 0.95), (3, "of the", 0.99)],
            {1: "jolene"},  # not by the owner, not by connectors
            id="no-shared-word",
        ),
        pytest.param(
            ["03495a0d pasted copy", "3 python 11 requirement", "cluster staging the"],
            [
                (0, "e564697a pasted", 0.97),
                (0, "03495a0d pasted", 0.94),
                (1, "3 python 12 requirement", 0.99),
                (2, "cluster staging", 0.95),
            ],
            {0: "03495a0d pasted", 2: "cluster staging"},
            id="other-identifiers",
        ),
    ],
)
def test_a_near_duplicate_whose_label_may_name_another_thing_is_not_one(candidate_keys, rows, expected):
    near: list[NearRow] = [{"idx": i, "norm_key": key, "similarity": sim} for i, key, sim in rows]
    wanted = [candidate(key, key.title()) for key in candidate_keys]
    assert nearest_by_candidate(wanted, near) == expected


def test_acronym_rows_are_tried_most_important_then_oldest_first():
    old, new = datetime(2020, 1, 1, tzinfo=UTC), datetime(2024, 1, 1, tzinfo=UTC)
    rows = [
        pair_row("new", importance=3, created_at=new),
        pair_row("undated", importance=3),
        pair_row("old", importance=3, created_at=old),
        pair_row("vital", importance=5, created_at=new),
    ]
    assert [r["norm_key"] for r in order_lookup_rows(rows)] == ["vital", "old", "new", "undated"]


def test_a_candidate_that_contradicts_its_merge_target_stands_alone():
    cands = [candidate("kafka retention", "Kafka retention"), candidate("b", "Beta")]
    plan = merge_targets(cands, [], {0: "kafka retention period", 1: "beta old"})
    target = uuid4()
    alone = plan.stand_alone({0: [target]}, {target: "kafka retention period"})
    assert alone.final_keys == ["kafka retention", "beta old"]
    assert alone.reasons == {1: "near_duplicate"}
    assert plan.final_keys == ["kafka retention period", "beta old"]  # the plan it came from is unchanged


def test_superseding_some_other_memory_keeps_the_merge():
    plan = merge_targets([candidate("a", "Alpha")], [], {0: "alpha old"})
    other = uuid4()
    assert plan.stand_alone({0: [other]}, {other: "unrelated"}).final_keys == ["alpha old"]


def test_one_row_per_final_key_the_most_important_then_the_longest():
    cands = [
        candidate("a", "A", "short", importance=3),
        candidate("b", "B", "a much longer definition", importance=3),
        candidate("c", "C", "vital", importance=5),
        candidate("d", "D", "alone"),
    ]
    chosen = one_per_key(cands, ["k", "k", "j", "d"])
    assert [(i, c.norm_key) for i, c in chosen] == [(1, "k"), (2, "j"), (3, "d")]
    chosen = one_per_key(cands[:3], ["k", "k", "k"])
    assert [(i, c.norm_key) for i, c in chosen] == [(2, "k")]


def test_a_memory_gains_the_other_definitions_and_every_excerpt_once():
    cands = [
        candidate("a", "A", "the kept definition", importance=5, excerpts=["passage one"]),
        candidate("b", "B", "another definition", excerpts=["passage one", "passage two"]),
        candidate("c", "C", "the kept definition"),
    ]
    keys = ["k", "k", "k"]
    texts = source_texts(cands, keys, one_per_key(cands, keys))
    assert texts == {"k": "passage one\nanother definition\npassage two"}


def test_related_edges_follow_the_merges_and_never_loop():
    cands = [
        candidate("a", "A", related_keys=["b", "c"]),
        candidate("b", "B", related_keys=["a"]),
        candidate("c", "C", related_keys=["missing"]),
    ]
    ids = {"a": UUID(int=1), "x": UUID(int=2)}
    # b and c merged into x: a↔x once each way, c's unknown key dropped
    assert related_pairs(cands, ["a", "x", "x"], ids) == [(UUID(int=1), UUID(int=2)), (UUID(int=2), UUID(int=1))]
    assert related_pairs(cands, ["a", "a", "a"], {"a": UUID(int=1)}) == []


def test_the_counts_recorded_with_the_source():
    cands = [candidate("a", "A"), candidate("b", "B"), candidate("c", "C")]
    plan = merge_targets(cands, [], {1: "x", 2: "y"})
    rows = [{"id": UUID(int=1), "inserted": True}, {"id": UUID(int=2), "inserted": False}]
    result = store_result(cands, rows, edges=4)
    assert (result.created, result.merged, result.items, result.edges) == (1, 2, 3, 4)
    assert result.memory_ids == [UUID(int=1), UUID(int=2)]
    counts = admission_counts(result, plan, 2, GateCounts(judged=5, superseded=1))
    assert counts == {
        "memories_created": 1,
        "memories_merged": 2,
        "merged_by": {"near_duplicate": 2},
        "items": 3,
        "edges": 4,
        "held_for_review": 2,
        "judged": 5,
        "judged_under_lock": 0,
        "judge_failures": 0,
        "superseded": 1,
        "corroborated": 0,
    }


def test_a_common_nouns_restatement_from_another_source_joins_by_vector():
    # a revised runbook's "Canary release", said again: its source mark is no word of its key
    cands = [candidate("canary release #d=b2", "Canary release")]
    rows: list[NearRow] = [{"idx": 0, "norm_key": "canary release #d=a1", "similarity": 0.99}]
    assert nearest_by_candidate(cands, rows) == {0: "canary release #d=a1"}


def test_a_sessions_mark_never_reads_as_an_owner_suffix():
    # a session id may hold "@" ("chat@ana"), which starts a key's owner suffix
    from contextos.normalization import source_mark
    from contextos.scopes import key_owner
    from contextos.services.admission import _source_tag
    from contextos.sources import SessionSource

    key = "dance studio" + source_mark(_source_tag(SessionSource(session_id="chat@ana", message_from=1, message_to=2)))
    assert "@" not in key and key_owner(key) is None
    assert key_owner(key + "@u=ana") == "@u=ana"
