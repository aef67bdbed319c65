"""The local update rule (a newer statement reporting a change to the same subject) and the
ranking rule that places an updated memory just below its update."""

from contextos.config import RetrievalSettings
from contextos.judge.local import reports_a_change, reports_an_update, reports_an_update_of_lexemes
from contextos.scoring import Candidate, rank, updates_first


def test_a_reported_change_to_the_same_subject_reads_as_an_update():
    assert reports_an_update(
        "Maria lives in Lisbon, in a flat near the river.",
        "Maria moved and now lives in Porto, close to her new office.",
    )
    assert reports_an_update("The mobile app is written in Java.", "The mobile app was rewritten in Kotlin.")


def test_no_cue_or_another_subject_is_not_an_update():
    assert not reports_a_change("Maria lives in Porto, close to her office.")
    assert not reports_an_update("Maria lives in Lisbon.", "Maria lives in Lisbon near the river.")
    assert not reports_an_update(
        "The payments service times out after 30 seconds.", "The search service now times out after 60 seconds."
    )
    assert not reports_an_update("Alice works on the billing team.", "Bob now works on the billing team.")
    assert not reports_an_update("The parking garage closes at nine.", "Maria moved to Porto.")


def test_a_cold_stub_is_compared_by_its_label_and_kept_lexemes():
    lexemes = ["maria", "live", "lisbon", "flat", "near", "river"]
    assert reports_an_update_of_lexemes("Maria's flat", lexemes, "Maria moved and now lives in Porto.")
    assert not reports_an_update_of_lexemes("Maria's flat", lexemes, "Tom moved to a flat in Porto.")


def candidate(name: str, vector: float, strength: float = 1.0) -> Candidate:
    return Candidate(
        id=name, strength=strength, hours_since_access=1.0, importance=5, vector=vector, methods={"vector"}
    )


def test_an_updated_memory_is_placed_just_below_its_update_and_nothing_else_moves():
    cfg = RetrievalSettings()
    pool = [candidate("stale", 0.9, 0.0), candidate("other", 0.8), candidate("current", 0.6)]
    before = [r.candidate.id for r in rank(pool, cfg, cfg.recipe(None))]
    assert before[0] == "stale"
    after = [r.candidate.id for r in rank(pool, cfg, cfg.recipe(None), updates=[("current", "stale")])]
    assert after.index("current") < after.index("stale")
    assert [i for i in after if i != "stale"] == [i for i in before if i != "stale"]
    assert "stale" in after  # demoted, never hidden


def test_a_chain_of_updates_keeps_newest_first_and_missing_partners_change_nothing():
    cfg = RetrievalSettings()
    ranked = rank([candidate("a", 0.9), candidate("b", 0.7), candidate("c", 0.5)], cfg, cfg.recipe(None))
    updates_first(ranked, [("c", "b"), ("b", "a"), ("gone", "c")])
    order = sorted(ranked, key=lambda r: -r.score.relevance)
    assert [r.candidate.id for r in order] == ["c", "b", "a"]
