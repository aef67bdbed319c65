"""Every turn is kept once as evidence, whatever the extractor returned (S8)."""

from datetime import UTC, datetime

from contextos.conversations import Turn, TurnConcept, episode_label, keep_every_turn, turn_excerpt
from contextos.extraction.validation import rejection_reason

WHEN = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TURNS = [
    Turn(seq=i, role="user" if i % 2 else "assistant", content=text, provenance="user_turn", said_at=WHEN)
    for i, text in enumerate(
        [
            "I adopted a grey cat called Pixel last week.",
            "How lovely, how is Pixel settling in at home?",
            "She sleeps on my keyboard every single morning.",
            "Hi!",
        ],
        start=1,
    )
]


def concept(label: str, turns: list[int], importance: int = 5) -> TurnConcept:
    return TurnConcept(
        label=label,
        definition=f"What the user said about {label.lower()} at length.",
        importance=importance,
        turns=turns,
    )


def acceptable(c: TurnConcept) -> bool:
    return rejection_reason(c, min_definition_chars=30) is None


def kept_turns(concepts: list[TurnConcept]) -> list[str]:
    return [e for c in concepts for e in c.excerpts]


def test_an_extractor_that_names_no_turns_still_keeps_every_turn_in_the_episode():
    """The Bedrock extractor's concepts carry no turns: each turn of substance lands in the episode."""
    out = keep_every_turn(
        [concept("Pixel", []), concept("Keyboard", [])],
        TURNS,
        session_id="conv-26:S1",
        first=1,
        max_concepts=10,
        acceptable=acceptable,
    )
    assert [c.label for c in out[:2]] == ["Pixel", "Keyboard"]
    episode = out[-1]
    assert episode.label == "Episode conv-26-S1 1" and episode.type == "event"
    assert episode.excerpts == [turn_excerpt(t) for t in TURNS[:3]]  # "Hi!" is evidence of nothing
    assert episode.excerpts[0] == "[2023-05-08 13:56, user] I adopted a grey cat called Pixel last week."
    assert acceptable(episode)


def test_a_turn_two_concepts_state_is_kept_once_by_the_first():
    out = keep_every_turn(
        [concept("Pixel", [1, 3]), concept("Grey cat", [1, 2])],
        TURNS,
        session_id="s",
        first=1,
        max_concepts=10,
        acceptable=acceptable,
    )
    assert len(out) == 2  # no episode: every turn of substance is some concept's evidence
    assert out[0].excerpts == [turn_excerpt(TURNS[0]), turn_excerpt(TURNS[2])]
    assert out[1].excerpts == [turn_excerpt(TURNS[1])]
    assert len(kept_turns(out)) == len(set(kept_turns(out))) == 3


def test_a_full_flush_gives_way_to_its_episode_and_stays_within_the_maximum():
    concepts = [concept(f"Topic {chr(65 + i)}", [1] if i == 0 else [], importance=9 - i) for i in range(10)]
    out = keep_every_turn(concepts, TURNS, session_id="s", first=1, max_concepts=10, acceptable=acceptable)
    assert len(out) == 10 and out[-1].label == "Episode s 1"
    assert [c.label for c in out[:9]] == [c.label for c in concepts[:9]]
    assert sorted(kept_turns(out)) == sorted(turn_excerpt(t) for t in TURNS[:3])


def test_any_session_id_gives_an_acceptable_episode_label():
    for session_id in ("a.b.c.d.e.f.g.h", "Élan: the 1st!", "???", "x" * 200):
        c = TurnConcept(label=episode_label(session_id, 7), definition="What was said in it, at some length.")
        assert acceptable(c), c.label


def test_a_rejected_concept_does_not_keep_a_turn():
    bad = TurnConcept(label="It", definition="short", turns=[1])
    out = keep_every_turn([bad], TURNS, session_id="s", first=1, max_concepts=10, acceptable=acceptable)
    assert out[0].excerpts == [] and turn_excerpt(TURNS[0]) in out[-1].excerpts


def test_a_hub_concept_keeps_no_turns_the_episode_does():
    """A speaker's name states nearly every turn of every session: its searchable text would fill
    across flushes and drop what came later, so its turns go to this range's episode; a specific
    concept still keeps the turns it states."""
    hub = concept("Caroline", [1, 2, 3], importance=9)
    out = keep_every_turn(
        [hub, concept("Pixel", [1])],
        TURNS,
        session_id="s",
        first=1,
        max_concepts=10,
        acceptable=acceptable,
        hub_turns=2,
    )
    assert out[0].label == "Caroline" and out[0].excerpts == []
    assert out[1].excerpts == [turn_excerpt(TURNS[0])]
    assert out[-1].label == "Episode s 1" and out[-1].excerpts == [turn_excerpt(t) for t in TURNS[1:3]]
    assert len(kept_turns(out)) == len(set(kept_turns(out))) == 3


def test_the_most_specific_concept_keeps_a_turn_it_shares():
    out = keep_every_turn(
        [concept("Pets", [1, 2, 3], importance=9), concept("Pixel", [1])],
        TURNS,
        session_id="s",
        first=1,
        max_concepts=10,
        acceptable=acceptable,
    )
    assert out[1].excerpts == [turn_excerpt(TURNS[0])]
    assert out[0].excerpts == [turn_excerpt(t) for t in TURNS[1:3]]
