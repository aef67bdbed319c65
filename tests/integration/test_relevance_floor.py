"""S6 relevance floor: a calibrated relevance per memory, abstention, and what a dry run left out."""

import pytest
from contextos import container
from contextos.scoring import answer_bar
from contextos.settings import Settings

from tests.helpers import call_api
from tests.integration.test_context import ingested  # noqa: F401  (the fixture: two documents via the API)


def context(tenant: str, body: dict) -> dict:
    status, result = call_api("POST", "/v1/context", tenant, {"dry_run": True} | body)
    assert status == 200, result
    return result


def test_an_unrelated_question_abstains_and_a_related_one_is_answered(ingested):  # noqa: F811
    unrelated = context(ingested, {"query": "What is the capital of France?"})
    assert unrelated["abstained"] is True
    assert unrelated["memories"] == [] and unrelated["index"] == []
    assert unrelated["tokens_used"] == 0
    assert "sourdough" not in unrelated["context"].lower()

    related = context(ingested, {"query": "how often does a sourdough starter need feeding?"})
    assert related["abstained"] is False
    assert "sourdough starter" in [m["label"].lower() for m in related["memories"]]
    floor = Settings().retrieval.relevance_floor
    for m in related["memories"]:
        assert floor <= m["relevance"] <= 1.0


def test_relevance_is_calibrated_not_divided_by_the_querys_best(ingested):  # noqa: F811
    """The best memory of an unrelated query is not scored 1 (a per-query softmax or a division by
    the query's best match would make it so); the best one of a related query scores far higher."""
    unrelated = context(ingested, {"query": "What is the capital of France?", "min_relevance": 0})
    related = context(ingested, {"query": "sourdough starter feeding", "min_relevance": 0})
    best_unrelated = max(m["relevance"] for m in unrelated["memories"])
    best_related = max(m["relevance"] for m in related["memories"])
    assert best_unrelated < 0.2 < 0.8 < best_related
    assert all(0.0 <= m["relevance"] <= 1.0 for m in unrelated["memories"] + related["memories"])


def test_min_relevance_zero_gives_the_unfloored_ranking(ingested):  # noqa: F811
    """With ``min_relevance: 0`` nothing is cut: every query gets its max_memories best by the recipe's
    score, in the recipe's order, as before the floor existed."""
    with container.database().tenant_tx(ingested) as conn:
        active = conn.execute("SELECT count(*) AS n FROM memories WHERE state = 'active'").fetchone()["n"]
    for query in ("What is the capital of France?", "how do we undo a bad release?"):
        result = context(ingested, {"query": query, "min_relevance": 0, "max_memories": 6})
        assert len(result["memories"]) == min(6, active)
        scores = [m["score"]["relevance"] for m in result["memories"]]
        assert scores == sorted(scores, reverse=True)
        assert result["abstained"] is False
        assert "relevance_floor" not in {m["reason"] for m in result["left_out"]}
    floored = context(ingested, {"query": "how do we undo a bad release?", "max_memories": 6})
    unfloored = context(ingested, {"query": "how do we undo a bad release?", "min_relevance": 0, "max_memories": 6})
    kept = [m["id"] for m in floored["memories"]]
    # the floor only removes: what it keeps is in the unfloored order
    assert kept == [m["id"] for m in unfloored["memories"] if m["id"] in kept]


def test_a_real_query_that_abstains_reinforces_nothing(ingested):  # noqa: F811
    with container.database().tenant_tx(ingested) as conn:
        before = conn.execute("SELECT id, access_count FROM memories ORDER BY id").fetchall()
    status, result = call_api("POST", "/v1/context", ingested, {"query": "How do I knit a scarf?"})
    assert status == 200 and result["abstained"] is True
    with container.database().tenant_tx(ingested) as conn:
        assert conn.execute("SELECT id, access_count FROM memories ORDER BY id").fetchall() == before


def test_always_load_memories_stay_when_the_rest_abstains(ingested):  # noqa: F811
    with container.database().tenant_tx(ingested) as conn:
        conn.execute("UPDATE memories SET always_load = true WHERE label ILIKE 'sourdough starter'")
    result = context(ingested, {"query": "What is the capital of France?"})
    assert result["abstained"] is True  # counted apart: it is in the block, yet nothing answered
    assert [m["label"].lower() for m in result["memories"]] == ["sourdough starter"]
    assert result["memories"][0]["always_load"] is True


def test_a_dry_run_lists_the_near_misses_with_each_reason(ingested):  # noqa: F811
    with container.database().tenant_tx(ingested) as conn:
        conn.execute("UPDATE memories SET strength_anchor = 0.05 WHERE label ILIKE 'cast iron skillet'")

    floor = Settings().retrieval.relevance_floor
    unrelated = context(ingested, {"query": "What is the capital of France?"})
    cut = [m for m in unrelated["left_out"] if m["reason"] == "relevance_floor"]
    assert cut and all(m["relevance"] < floor and m["score"] is not None for m in cut)
    banded = [m for m in unrelated["left_out"] if m["reason"] == "band"]
    assert "cast iron skillet" in [m["label"].lower() for m in banded]  # forgotten, not among the best evidence
    assert all(m["score"] is None for m in banded)

    few = context(ingested, {"query": "deployment", "min_relevance": 0, "max_memories": 2})
    assert "max_memories" in {m["reason"] for m in few["left_out"]}
    assert "source_cap" in {m["reason"] for m in few["left_out"]}  # at most 1 of 2 per source (60 %)
    left = {m["id"] for m in few["left_out"]}
    assert not left & {m["id"] for m in few["memories"]}

    tight = context(ingested, {"query": "deployment", "min_relevance": 0, "token_budget": 16})
    budget = [m for m in tight["left_out"] if m["reason"] == "token_budget"]
    assert budget and tight["tokens_used"] <= 16
    assert not {m["id"] for m in budget} & {m["id"] for m in tight["memories"]}


def test_a_real_query_lists_no_near_misses(ingested):  # noqa: F811
    status, result = call_api("POST", "/v1/context", ingested, {"query": "What is the capital of France?"})
    assert status == 200 and result["left_out"] == []


@pytest.mark.parametrize("bad", [-0.1, 1.5, "high"])
def test_a_bad_min_relevance_is_a_4xx(ingested, bad):  # noqa: F811
    status, result = call_api("POST", "/v1/context", ingested, {"query": "rollback", "min_relevance": bad})
    assert 400 <= status < 500 and "error" in result


def test_a_question_is_answered_when_its_best_clears_the_bar_for_the_tenants_size(ingested):  # noqa: F811
    """Abstention reads the best candidate against `answer_bar` of the tenant's hot memories; an
    answered query keeps every candidate at or above the lower of the bar and the floor."""
    cfg = Settings().retrieval
    hot = container.reads().searchable_size(ingested, 0.0)
    assert hot > 0
    bar = answer_bar(hot, cfg)
    outcomes = set()
    for query in (
        "how often does a sourdough starter need feeding?",
        "What is the capital of France?",
        "what temperature should the oven be?",
        "flour and water",
        "which bread has the most crust?",
    ):
        best = max(
            (m["relevance"] for m in context(ingested, {"query": query, "min_relevance": 0})["memories"]), default=0
        )
        result = context(ingested, {"query": query})
        assert result["abstained"] is (best < bar), (query, best, bar)
        outcomes.add(result["abstained"])
        for m in result["memories"]:
            assert m["relevance"] >= min(bar, cfg.relevance_floor), query
    assert outcomes == {True, False}
