import importlib.metadata

from contextos.extraction.local import LocalConceptExtractor, concept_budget, pipeline
from contextos.extraction.validation import validate

DOC = """# Deployment handbook

Blue-green deployment keeps two identical production environments. The router sends traffic to one of them.
A canary release sends a small share of traffic to the new version first. Canary release catches regressions early.

## Rollback

Rollback means switching the router back to the previous environment. Blue-green deployment makes rollback fast.
We decided to use feature flags for risky changes. Feature flags let us disable a change without a deploy.
"""


def test_extraction_is_deterministic():
    extractor = LocalConceptExtractor()
    assert extractor.extract(DOC) == extractor.extract(DOC)


def test_it_finds_the_key_phrases_with_the_sentences_that_define_them():
    concepts = {c.label.lower(): c for c in LocalConceptExtractor().extract(DOC)}
    assert {"blue-green deployment", "canary release", "feature flags"} <= set(concepts)
    assert "identical production environments" in concepts["blue-green deployment"].definition
    assert concepts["feature flags"].type == "decision"


def test_labels_already_known_from_earlier_sections_are_not_repeated():
    concepts = LocalConceptExtractor().extract(DOC, known=["Canary release"])
    assert "canary release" not in {c.label.lower() for c in concepts}


def test_its_output_passes_validation():
    concepts = LocalConceptExtractor().extract(DOC)
    report = validate(concepts, min_definition_chars=30, generic_modifiers=["system"])
    assert len(report.accepted) >= 3
    assert report.rejected.get("structural_label", 0) == 0


GENERIC_HEAVY = """The system stores memory as text. The model reads the data and the system writes the text back.
Every model needs data. The memory of the system is text and data. A vector index speeds up the memory search.
The vector index is rebuilt nightly by the maintenance job. The maintenance job also compacts the memory store.
"""


def test_generic_single_words_are_never_labels():
    labels = {c.label.lower() for c in LocalConceptExtractor().extract(GENERIC_HEAVY)}
    assert labels.isdisjoint({"system", "memory", "model", "text", "data"})
    assert {"vector index", "maintenance job"} <= labels


def test_the_number_of_concepts_follows_the_length_of_the_document():
    assert 3 <= concept_budget(6, minimum=3, maximum=60) <= 10  # a note
    assert 25 <= concept_budget(350, minimum=3, maximum=60) <= 60  # a 40 KB paper
    note = LocalConceptExtractor().extract(DOC)
    assert 3 <= len(note) <= 10
    # A long third-party text (spaCy's own description, installed with it) yields many more.
    long_text = importlib.metadata.distribution("spacy").metadata.get_payload()
    assert len(LocalConceptExtractor().extract(long_text)) >= 2 * len(note)


def test_related_edges_join_concepts_named_in_the_same_sentence():
    concepts = {c.label.lower(): c for c in LocalConceptExtractor().extract(GENERIC_HEAVY)}
    assert "maintenance job" in {r.lower() for r in concepts["vector index"].related}
    for concept in concepts.values():
        assert concept.label not in concept.related


def test_definitions_are_the_documents_own_sentences():
    for concept in LocalConceptExtractor().extract(DOC):
        for sentence in concept.definition.split(". "):
            assert sentence.rstrip(".").strip() in DOC


def test_the_language_model_is_loaded_once_per_process():
    assert pipeline() is pipeline()


def test_every_sentence_of_the_document_is_kept_in_some_concepts_definition_or_excerpts():
    concepts = LocalConceptExtractor().extract(DOC)
    kept = " ".join(c.definition + " " + " ".join(c.excerpts) for c in concepts)
    sentences = [s.strip() + "." for line in DOC.splitlines() if not line.startswith("#") for s in line.split(". ")]
    missing = [s for s in sentences if len(s) > 1 and s.rstrip(".") not in kept]
    assert missing == []


def test_a_sentence_about_another_concept_is_not_taken_as_this_ones_definition():
    doc = (
        "Rich is a library for terminal output. Rich requires Python 3.8 or later. "
        "Rich renders tables and progress bars in Python programs. Python is a programming language. "
        "Many terminal tools are built with Rich."
    )
    concepts = {c.label: c for c in LocalConceptExtractor().extract(doc)}
    assert "Python 3.8" not in concepts["Python"].definition
    assert "Python 3.8" in concepts["Rich"].definition + " ".join(concepts["Rich"].excerpts)
