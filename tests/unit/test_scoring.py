import math
from datetime import datetime

import pytest
from contextos.config import RetrievalSettings
from contextos.scoring import Candidate, answer_bar, rank, score_candidate, softmax

CFG = RetrievalSettings()
STANDARD = CFG.recipe("standard")  # the seed formula (S6.4)


def test_relevance_matches_the_spec_formula_by_hand():
    c = Candidate(
        id="a", strength=0.8, hours_since_access=5.0, importance=5, vector=0.9, text=0.5, graph=0.2, methods={"vector"}
    )
    s = score_candidate(c, CFG, STANDARD)
    semantic = 0.5 * 0.9 + 0.3 * 0.5 + 0.2 * 0.2  # 0.64
    recency = math.exp(-0.1 * 5.0)  # 0.60653
    assert s.semantic == pytest.approx(semantic)
    assert s.recency == pytest.approx(recency)
    assert s.relevance == pytest.approx(0.4 * semantic + 0.3 * 0.8 + 0.3 * recency)  # 0.67796


def test_found_by_several_methods_earns_the_bonus():
    one = score_candidate(
        Candidate(id="a", strength=0.5, hours_since_access=1, importance=5, vector=0.5, methods={"vector"}),
        CFG,
        STANDARD,
    )
    two = score_candidate(
        Candidate(id="a", strength=0.5, hours_since_access=1, importance=5, vector=0.5, methods={"vector", "text"}),
        CFG,
        STANDARD,
    )
    assert two.relevance - one.relevance == pytest.approx(CFG.multi_method_bonus)


def test_softmax_sums_to_one_and_keeps_order():
    p = softmax([0.7, 0.5, 0.6], 0.1)
    assert sum(p) == pytest.approx(1.0)
    assert p[0] > p[2] > p[1]
    assert p[0] / p[1] == pytest.approx(math.exp((0.7 - 0.5) / 0.1))


def test_ties_break_by_strength_then_recency_then_importance():
    base = {"vector": 0.5, "methods": {"vector"}}
    # Same relevance by construction: trade strength against recency exactly.
    a = Candidate(id="low-strength", strength=0.5, hours_since_access=0.0, importance=9, **base)
    b = Candidate(id="high-strength", strength=0.6, hours_since_access=-math.log(0.9) / 0.1, importance=1, **base)
    c = Candidate(id="same-but-important", strength=0.5, hours_since_access=0.0, importance=10, **base)
    d = Candidate(id="same-less-important", strength=0.5, hours_since_access=0.0, importance=2, **base)
    ranked = [r.candidate.id for r in rank([d, a, c, b], CFG)]
    assert score_candidate(a, CFG).relevance == pytest.approx(score_candidate(b, CFG).relevance)
    assert ranked == ["high-strength", "same-but-important", "low-strength", "same-less-important"]


def test_rank_orders_by_relevance_and_reports_probabilities():
    strong = Candidate(id="s", strength=0.9, hours_since_access=1, importance=5, vector=0.9, methods={"vector"})
    weak = Candidate(id="w", strength=0.3, hours_since_access=100, importance=5, vector=0.2, methods={"vector"})
    ranked = rank([weak, strong], CFG)
    assert [r.candidate.id for r in ranked] == ["s", "w"]
    assert sum(r.score.probability for r in ranked) == pytest.approx(1.0)


def test_the_intent_adaptive_recipe_weighs_six_signals_per_intent_by_hand():
    from contextos.config import IntentAdaptiveRecipe

    recipe = IntentAdaptiveRecipe()
    c = Candidate(
        id="a",
        strength=0.9,
        hours_since_access=2.0,
        importance=8,
        access_count=3,
        vector=0.7,
        text=0.5,
        graph=0.4,
        methods={"vector", "text", "graph"},
    )
    debug = score_candidate(c, CFG, recipe, "debug")
    recency = math.exp(-0.1 * 2.0)
    frequency = math.log1p(3) / math.log1p(20)
    expected = 0.20 * 0.7 + 0.30 * 0.5 + 0.30 * 0.4 + 0.10 * recency + 0.05 * 0.8 + 0.05 * frequency
    assert debug.relevance == pytest.approx(expected + 2 * CFG.multi_method_bonus)
    assert (debug.importance, debug.frequency, debug.recipe) == (0.8, pytest.approx(frequency), "intent_adaptive")
    brainstorm = score_candidate(c, CFG, recipe, "brainstorm")
    assert brainstorm.relevance != debug.relevance
    recall = score_candidate(c, CFG, recipe, "recall")  # no profile of its own: the default one
    assert recall.relevance == pytest.approx(score_candidate(c, CFG, recipe, "default").relevance)


def test_the_fusion_recipe_ranks_by_reciprocal_ranks_with_shared_ranks_for_ties():
    from contextos.config import FusionRecipe
    from contextos.scoring import fused_semantic

    recipe = FusionRecipe(rrf_k=60, semantic_vector=1.0, semantic_text=1.0, semantic_graph=0.0)
    pool = [
        Candidate(id="a", strength=1.0, hours_since_access=0, importance=5, vector=0.9, text=0.0, graph=0.3),
        Candidate(id="b", strength=1.0, hours_since_access=0, importance=5, vector=0.5, text=1.0, graph=0.3),
        Candidate(id="c", strength=1.0, hours_since_access=0, importance=5, vector=0.7, text=1.0),
    ]
    best = 2 / 61
    # a: vector rank 1, no text → (1/61) / best; b: vector 3, text tied first with c → (1/63 + 1/61);
    # c: vector 2, text 1 → (1/62 + 1/61). The graph ties at 0.3 weigh nothing by default.
    expected = [(1 / 61) / best, (1 / 63 + 1 / 61) / best, (1 / 62 + 1 / 61) / best]
    assert fused_semantic(pool, recipe) == pytest.approx(expected)
    ranked = rank(pool, RetrievalSettings(), recipe)
    assert [r.candidate.id for r in ranked] == ["c", "b", "a"]
    top = ranked[0].score
    assert top.recipe == "fusion" and top.bonus == 0.0  # fusion already rewards agreement
    assert top.relevance == pytest.approx(0.4 * expected[2] + 0.3 * 1.0 + 0.3 * top.recency)
    # With the graph weighted, its tied 0.3 gives a and b the same rank, not an arbitrary order.
    graphed = fused_semantic(pool, FusionRecipe(semantic_vector=0.0, semantic_text=0.0, semantic_graph=1.0))
    assert graphed[0] == graphed[1] == pytest.approx(1.0) and graphed[2] == 0.0


def _candidate(name: str, strength: float, vector: float, text: float, embedding: list[float]) -> Candidate:
    return Candidate(
        id=name,
        strength=strength,
        hours_since_access=1.0,
        importance=5,
        vector=vector,
        text=text,
        methods={"vector", "text"},
        payload={},
    )


def test_relevance_recipe_lets_strength_reorder_only_within_its_gate():
    recipe = CFG.recipe("relevance")
    old_relevant = _candidate("old", 0.0, 0.9, 1.0, [1.0, 0.0])
    recent_irrelevant = _candidate("recent", 1.0, 0.5, 0.3, [0.0, 1.0])
    ranked = rank([recent_irrelevant, old_relevant], CFG, recipe)
    assert [r.candidate.id for r in ranked] == ["old", "recent"]  # strength costs at most the gate
    top = ranked[0].score
    assert top.semantic == pytest.approx(1.0)
    fresh = recipe.fresh_strength * 0.0 + (1 - recipe.fresh_strength) * math.exp(-0.1 * 1.0)
    assert top.relevance == pytest.approx(1.0 * (1 - recipe.gate + recipe.gate * fresh))


def test_an_update_outranks_the_older_statement_of_the_same_subject_not_other_memories():
    recipe = CFG.recipe("relevance").model_copy(update={"same_subject_cosine": 0.5})  # off by default
    stale = _candidate("stale", 0.0, 0.8, 1.0, [1.0, 0.1])
    current = _candidate("current", 0.9, 0.8, 0.7, [0.95, 0.2])  # same subject, less matching text
    other_old = _candidate("other", 0.0, 0.8, 1.0, [0.0, 1.0])  # as relevant, another subject
    same_subject = [("stale", "current")]  # what the store finds by cosine between the two
    order = [r.candidate.id for r in rank([stale, other_old, current], CFG, recipe, same_subject=same_subject)]
    assert order.index("current") < order.index("stale")
    assert order[0] == "other"  # memories about different things keep their order by relevance


def test_the_relevance_recipe_weighs_a_shared_community_by_its_own_weight():
    from contextos.config import RelevanceRecipe
    from contextos.scoring import pooled_semantic

    def pool() -> list[Candidate]:
        return [
            Candidate(id="a", strength=1, hours_since_access=0, importance=5, vector=0.8, text=1.0),
            Candidate(id="b", strength=1, hours_since_access=0, importance=5, vector=0.4, community=1.0),
        ]

    assert pooled_semantic(pool(), RelevanceRecipe()) == pytest.approx([1.0, 0.25])
    assert pooled_semantic(pool(), RelevanceRecipe(semantic_community=0.1)) == pytest.approx([1.0, 0.35])


def test_the_answer_bar_rises_with_the_tenant_and_never_falls_below_its_minimum():
    bars = [answer_bar(n, CFG) for n in (1, 20, 60, 700, 5000)]
    assert bars == sorted(bars)
    assert bars[0] == bars[1] == CFG.abstain_min_relevance  # however small the chat
    # at the reference size the odds are exp(log_odds); ten times the memories, ten times the odds
    assert bars[2] == pytest.approx(max(1 / (1 + math.exp(-CFG.abstain_log_odds)), CFG.abstain_min_relevance))
    odds = [b / (1 - b) for b in (answer_bar(600, CFG), answer_bar(6000, CFG))]
    assert odds[1] / odds[0] == pytest.approx(10.0)


def _turn(memory_id: str, said: str, words: str, vector: float) -> Candidate:
    return Candidate(
        id=memory_id,
        strength=0.5,
        hours_since_access=1.0,
        importance=5,
        vector=vector,
        methods={"vector"},
        payload={
            "norm_key": f"said:{memory_id}",
            "definition": f"[{said}, user] {words}",
            "valid_from": datetime.fromisoformat(said + ":00+00:00"),
        },
    )


def test_a_later_turn_that_corrects_itself_ranks_above_what_it_corrects_and_nothing_else_moves():
    old = _turn("old", "2026-10-27 17:24", "after midnight pacific, say 2am pacific", 0.8)
    other = _turn("other", "2026-10-27 17:30", "the snowflake table is RAW.SHOPIFY_ORDERS", 0.7)
    newer = _turn("newer", "2026-11-03 16:00", "we changed our minds on 2am, so 1am pacific", 0.5)
    plain = _turn("plain", "2026-11-03 16:05", "1am pacific works for the 2am crowd too", 0.4)  # no cue
    order = [r.candidate.id for r in rank([old, other, newer, plain], CFG, CFG.recipe("relevance"))]
    assert order.index("newer") < order.index("old")
    assert order.index("plain") > order.index("old")  # a turn without a correction cue keeps its place
    assert order.index("other") > order.index("old")  # another subject keeps its order
    off = CFG.model_copy(update={"correction_min_shared": 0})
    assert rank([old, other, newer, plain], off, off.recipe("relevance"))[0].candidate.id == "old"


def test_a_cold_stub_says_its_correction_by_the_stems_it_keeps():
    old = _turn("old", "2026-10-27 17:24", "the offsite is the week of march 9", 0.8)
    payload = {
        "norm_key": "said:newer",
        "definition": "",  # a cold stub keeps no text on the read path, only its lexemes
        "cold": True,
        "label": "Turn 5 of offsite-s2",
        "lexemes": ["actual", "date", "march", "week", "16", "turn", "offsit", "s2"],
        "valid_from": datetime.fromisoformat("2026-11-03 16:00:00+00:00"),
    }

    def stub(memory_id: str, lexemes: list[str]) -> Candidate:
        row = {**payload, "norm_key": f"said:{memory_id}", "lexemes": lexemes}
        return Candidate(
            id=memory_id,
            strength=0.5,
            hours_since_access=1.0,
            importance=5,
            vector=0.5,
            methods={"vector"},
            payload=row,
        )

    newer, plain = stub("newer", payload["lexemes"]), stub("plain", ["date", "march", "week"])  # plain: no cue
    # what a stub shares with another only through its label ("Turn 5 of offsite-s2") is not said
    label_only = stub("label_only", ["actual", "16", "turn", "offsit", "s2"])
    older = _turn("older", "2026-10-27 17:20", "turn the offsite s2 plan around", 0.9)
    assert [r.candidate.id for r in rank([older, label_only], CFG, CFG.recipe("relevance"))] == ["older", "label_only"]
    order = [r.candidate.id for r in rank([old, newer, plain], CFG, CFG.recipe("relevance"))]
    assert order.index("newer") < order.index("old") < order.index("plain")
