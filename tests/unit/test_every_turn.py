"""What a flush keeps besides its concepts (S8): every turn of substance as its own memory, and
each concept pointing at the turns that state it, whatever the extractor returned."""

from datetime import UTC, datetime
from uuid import uuid4

from contextos.conversations import Role, Turn, TurnConcept, keep_every_turn, turn_excerpt, turn_key, turn_label
from contextos.evidence import stems
from contextos.extraction.validation import rejection_reason, validate
from contextos.normalization import is_verbatim_key, norm_key
from contextos.scoring import Candidate, Ranked, Score
from contextos.services.admission import embedded_text
from contextos.services.context_block import said_in_a_session_about, shown_once

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


def shown(concepts: list[TurnConcept]) -> list[str]:
    return [e for c in concepts for e in c.excerpts]


def test_every_turn_of_substance_is_its_own_memory_even_when_no_concept_names_it():
    """The Bedrock extractor's concepts may carry no turns: each turn of substance is still kept,
    as what was said, keyed by its place, with its session's header as searchable text."""
    concepts, turns = keep_every_turn(
        [concept("Pixel", []), concept("Keyboard", [])], TURNS, session_id="conv-26:S1", acceptable=acceptable
    )
    assert [c.label for c in concepts] == ["Pixel", "Keyboard"] and shown(concepts) == []
    assert [t.definition for t in turns] == [turn_excerpt(t) for t in TURNS[:3]]  # "Hi!" is evidence of nothing
    assert turns[0].definition == "[2023-05-08 13:56, user] I adopted a grey cat called Pixel last week."
    assert turns[0].label == "Turn 1 of conv-26-S1" and turns[0].type == "event"
    assert turns[0].key == turn_key(TURNS[0]) and is_verbatim_key(turns[0].key)
    assert turns[0].excerpts == ["Session conv-26:S1 on 2023-05-08, about Pixel, Keyboard"]
    assert all(acceptable(t) for t in turns)


def test_a_concept_shows_the_turns_it_states_and_points_at_them():
    concepts, turns = keep_every_turn(
        [concept("Pixel", [1, 3]), concept("Grey cat", [1, 2])], TURNS, session_id="s", acceptable=acceptable
    )
    assert concepts[0].excerpts == [turn_excerpt(TURNS[0]), turn_excerpt(TURNS[2])]
    assert concepts[1].excerpts == [turn_excerpt(TURNS[1])]  # a turn two concepts state is shown once
    assert concepts[0].related == ["Turn 1 of s", "Turn 3 of s"]
    assert concepts[1].related == ["Turn 1 of s", "Turn 2 of s"]
    assert len(turns) == 3


def test_two_turns_never_share_a_key_though_their_labels_read_alike():
    """``Turn 7 of conv-26`` and ``Turn 26 of conv-7`` have one label key (its words sorted): the
    key of what was said keeps them apart, and validation does not drop one as a duplicate."""
    first, second = TURNS[0], TURNS[2]
    a = TurnConcept(label=turn_label("conv-26", 7), definition=turn_excerpt(first), key=turn_key(first))
    b = TurnConcept(label=turn_label("conv-7", 26), definition=turn_excerpt(second), key=turn_key(second))
    assert norm_key(a.label) == norm_key(b.label) and a.key != b.key
    assert len(validate([a, b], min_definition_chars=10, generic_modifiers=[]).accepted) == 2


def test_the_same_words_from_the_same_role_are_one_turn():
    said = TURNS[0]
    again = said.model_copy(update={"seq": 9, "content": "  I adopted a GREY cat called Pixel   last week."})
    assert turn_key(again) == turn_key(said)  # a note remembered twice reinforces one memory
    assert turn_key(said.model_copy(update={"role": Role.assistant})) != turn_key(said)
    assert "@" not in turn_key(said)  # an "@" starts a key's owner suffix


def test_any_session_id_gives_an_acceptable_turn_label():
    for session_id in ("a.b.c.d.e.f.g.h", "Élan: the 1st!", "???", "x" * 200):
        c = TurnConcept(label=turn_label(session_id, 7), definition="[x] What was said in it, at some length.")
        assert acceptable(c), c.label


def test_a_rejected_concept_shows_no_turn_but_the_turn_is_kept():
    bad = TurnConcept(label="It", definition="short", turns=[1])
    concepts, turns = keep_every_turn([bad], TURNS, session_id="s", acceptable=acceptable)
    assert concepts[0].excerpts == [] and turn_excerpt(TURNS[0]) in [t.definition for t in turns]


def test_a_hub_concept_points_at_its_turns_but_shows_none():
    """A speaker's name states nearly every turn of every session: its text would fill across
    flushes and drop what came later, so it shows none of them; a specific concept still does."""
    concepts, turns = keep_every_turn(
        [concept("Caroline", [1, 2, 3], importance=9), concept("Pixel", [1])],
        TURNS,
        session_id="s",
        acceptable=acceptable,
        hub_turns=2,
    )
    assert concepts[0].excerpts == [] and concepts[0].related == ["Turn 1 of s", "Turn 2 of s", "Turn 3 of s"]
    assert concepts[1].excerpts == [turn_excerpt(TURNS[0])]
    assert len(turns) == 3


def test_the_most_specific_concept_shows_a_turn_it_shares():
    concepts, _ = keep_every_turn(
        [concept("Pets", [1, 2, 3], importance=9), concept("Pixel", [1])], TURNS, session_id="s", acceptable=acceptable
    )
    assert concepts[1].excerpts == [turn_excerpt(TURNS[0])]
    assert concepts[0].excerpts == [turn_excerpt(t) for t in TURNS[1:3]]


def _ranked(definition: str, norm_key: str) -> Ranked:
    score = Score(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, [], "default", 0)
    payload = {"definition": definition, "norm_key": norm_key}
    return Ranked(Candidate(id=uuid4(), strength=1, hours_since_access=0, importance=5, payload=payload), score)


def test_the_block_shows_each_passage_once():
    said = turn_excerpt(TURNS[0])
    header = "Session s1 on 2023-05-08, about Pixel"
    concept = _ranked("The user's grey cat.", "pixel")
    turn, other_turn = _ranked(said, turn_key(TURNS[0])), _ranked(turn_excerpt(TURNS[2]), turn_key(TURNS[2]))
    excerpts = {concept.candidate.id: [said], turn.candidate.id: [header], other_turn.candidate.id: [header]}
    kept, shown = shown_once([concept, turn, other_turn], excerpts)
    # the turn is shown under the concept that states it, not again on its own; a turn never
    # shows its session's header (its own text says when and who)
    assert [r.candidate.id for r in kept] == [concept.candidate.id, other_turn.candidate.id]
    assert shown == {concept.candidate.id: [said]}
    # a turn ranked first is shown alone, and the concept below it does not repeat it
    kept, shown = shown_once([turn, concept], excerpts)
    assert [r.candidate.id for r in kept] == [turn.candidate.id, concept.candidate.id] and shown == {}
    # a concept is never left out for what another showed: only a kept turn is
    twin = _ranked(said, "grey cat")
    kept, _ = shown_once([turn, twin], excerpts)
    assert [r.candidate.id for r in kept] == [turn.candidate.id, twin.candidate.id]


def test_a_turn_of_a_session_about_the_query_is_never_cut_by_the_floor():
    header = "Session offsite on 2023-05-08, about Platform group, Hotel booking"
    turn = {"norm_key": turn_key(TURNS[2]), "excerpts": [header]}
    assert said_in_a_session_about(stems("Which city is the offsite in?"), turn)
    assert said_in_a_session_about(stems("who books the hotels"), turn)
    # the header's own words name no session, and a concept is judged by the floor as ever
    assert not said_in_a_session_about(stems("what did we say in the session about it"), turn)
    assert not said_in_a_session_about(stems("Which city is the offsite in?"), turn | {"norm_key": "offsite"})
    assert not said_in_a_session_about(stems("What is the capital of Peru?"), turn)


def test_a_kept_turn_is_embedded_as_its_words_alone():
    _, (turn, *_) = keep_every_turn([], TURNS, session_id="s", acceptable=acceptable)
    assert embedded_text(turn, 500) == "I adopted a grey cat called Pixel last week."
    named = concept("Pixel", [1])
    assert embedded_text(named, 500) == f"Pixel: {named.definition}"  # a concept: its label and definition


def test_a_kept_turn_carries_the_turn_it_follows_small_talk_included():
    said = [
        Turn(seq=1, role="assistant", content="Which city?", provenance="agent_turn", said_at=WHEN),
        Turn(seq=2, role="user", content="Porto is out, too expensive in March.", provenance="user_turn", said_at=WHEN),
    ]
    _, (porto,) = keep_every_turn([], said, session_id="s", acceptable=acceptable)  # "Which city?" is not kept
    assert porto.excerpts[1:] == ["After: Which city?"]  # searchable with it: what it answers
    # the floor spares a turn for its session's header, never for the turn it follows
    row = {"norm_key": porto.key, "excerpts": ["After: Which city?", *porto.excerpts[:1]]}
    assert not said_in_a_session_about(stems("Which city is the capital of Peru?"), row)
