from contextos.extraction.local import LocalConceptExtractor
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
