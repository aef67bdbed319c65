"""A document's passages kept verbatim (S4, S8): what was written stays findable beside its concepts."""

from contextos.models import Concept
from contextos.normalization import is_verbatim_key, turn_words
from contextos.passages import keep_every_passage, passage_key, passages

TEXT = (
    """# Runbook

Deploys go out through blue-green environments; traffic switches after the checks pass.

Rollback: switch the router back to the idle environment within five minutes.

Contact.

"""
    + "A very long paragraph about canary releases that keeps on going. " * 12
)


def test_paragraphs_are_joined_up_to_the_passage_size_and_a_long_one_stands_alone():
    found = passages(TEXT, chars=120)
    assert found[0].startswith("# Runbook Deploys go out") and "Rollback" not in found[0]
    assert found[1].startswith("Rollback: switch") and found[1].endswith("Contact.")
    assert found[2].startswith("A very long paragraph") and len(found[2]) > 120  # never cut mid-paragraph


def test_each_passage_of_substance_is_a_verbatim_memory_with_its_documents_header():
    concepts = [Concept(label="Blue-green deployment", definition="x" * 40, importance=8)]
    kept = keep_every_passage(TEXT, "runbook.md", concepts, chars=120, min_words=5)
    assert [k.label for k in kept] == ["Passage 1 of runbook-md", "Passage 2 of runbook-md", "Passage 3 of runbook-md"]
    assert kept[1].definition == passages(TEXT, chars=120)[1] and kept[1].type == "fact"
    assert kept[1].excerpts == ["Document runbook.md, about Blue-green deployment"]
    assert all(k.key and is_verbatim_key(k.key) for k in kept)
    assert keep_every_passage("Too short to keep.", "x", [], min_words=5) == []


def test_the_same_words_are_one_passage_and_a_passage_keeps_its_own_brackets():
    assert passage_key("Rollback:  switch the router back.") == passage_key("rollback: switch the router back.")
    assert passage_key("Rollback: switch the router back.") != passage_key("Rollback: switch the router.")
    assert turn_words("[Docs] The router switches back.") == "[Docs] The router switches back."
    assert turn_words("[2023-05-08 13:56, user] The router switches back.") == "The router switches back."
