import pytest
from contextos.normalization import estimate_tokens, names_one_thing, norm_key, normalize_text

MODIFIERS = ["system", "approach", "method"]


def test_norm_key_lowercases_strips_punctuation_drops_modifiers_and_sorts_words():
    assert norm_key("The Retrieval-System", MODIFIERS) == "retrieval the"
    assert norm_key("retrieval system", MODIFIERS) == norm_key("System: Retrieval!", MODIFIERS) == "retrieval"


def test_norm_key_of_word_order_variants_is_the_same():
    assert norm_key("policy optimization", MODIFIERS) == norm_key("Optimization Policy", MODIFIERS)


def test_norm_key_keeps_modifiers_when_the_label_is_only_modifiers():
    assert norm_key("System Method", MODIFIERS) == "method system"


def test_normalize_text_collapses_whitespace_and_removes_control_characters():
    raw = "Title\r\n\r\n\r\n  lots   of\tspace\x07 here  \n\n\nend"
    assert normalize_text(raw) == "Title\n\nlots of space here\n\nend"


def test_estimate_tokens_grows_with_text_and_is_zero_for_nothing():
    assert estimate_tokens("") == 0
    assert estimate_tokens("one two three") >= 3
    assert estimate_tokens("x" * 400) == 100


def test_norm_key_folds_simple_plurals_on_both_sides():
    assert norm_key("Feature Flags") == norm_key("feature flag")
    assert norm_key("Policies") == norm_key("policy")
    assert norm_key("process") == "process" and norm_key("status") == "status"


def test_initials_and_acronyms_pair_a_long_name_with_its_short_form():
    from contextos.normalization import acronyms, initials

    assert initials("Group Relative Policy Optimization") == "grpo"
    assert initials("Bidirectional Encoder Representations from Transformers") == "bert"
    assert initials("Kubernetes") is None
    assert acronyms("GRPO training method") == ["grpo"]
    assert acronyms("Graph expansion") == []


def test_lsh_bands_are_deterministic_and_separate_near_from_far_vectors():
    import numpy as np
    from contextos.lsh import BANDS, band_keys

    rng = np.random.default_rng(1)
    base = rng.standard_normal(384)
    base /= np.linalg.norm(base)
    noise = rng.standard_normal(384)
    noise -= (noise @ base) * base
    noise /= np.linalg.norm(noise)
    near = 0.97 * base + np.sqrt(1 - 0.97**2) * noise  # cosine 0.97
    far = rng.standard_normal(384)
    keys = band_keys([base.tolist(), near.tolist(), far.tolist()])
    assert keys == band_keys([base.tolist(), near.tolist(), far.tolist()])
    assert all(len(k) == BANDS for k in keys)
    assert set(keys[0]) & set(keys[1])
    assert not set(keys[0]) & set(keys[2])


def _pair_at(cosine: float, rng) -> tuple[list[float], list[float]]:
    import numpy as np

    base = rng.standard_normal(384)
    base /= np.linalg.norm(base)
    noise = rng.standard_normal(384)
    noise -= (noise @ base) * base
    noise /= np.linalg.norm(noise)
    return base.tolist(), (cosine * base + np.sqrt(1 - cosine**2) * noise).tolist()


def test_a_signature_holds_the_same_bits_as_the_band_keys():
    import numpy as np
    from contextos.lsh import BANDS, BITS_PER_BAND, SIGNATURE_BITS, sketch

    vectors = np.random.default_rng(3).standard_normal((5, 384)).tolist()
    result = sketch(vectors)
    for keys, signature in zip(result.band_keys, result.signatures, strict=True):
        assert len(signature) == SIGNATURE_BITS and set(signature) <= {"0", "1"}
        for band, key in enumerate(keys):
            bits = signature[band * BITS_PER_BAND : (band + 1) * BITS_PER_BAND]
            assert key >> BITS_PER_BAND == band
            assert key & 0xFFFF == sum(1 << i for i, bit in enumerate(bits) if bit == "1")
    assert BANDS * BITS_PER_BAND == SIGNATURE_BITS


def test_the_hamming_bound_keeps_pairs_at_the_threshold_and_drops_unrelated_ones():
    import numpy as np
    from contextos.lsh import max_hamming, sketch

    # p = acos(0.93)/π = 0.11977; 256p = 30.66; σ = sqrt(256 p (1-p)) = 5.195; 30.66 + 4σ = 51.4 → 52
    assert max_hamming(0.93) == 52
    assert max_hamming(1.0) == 0
    rng = np.random.default_rng(4)
    bound = max_hamming(0.93)

    def distance(a: list[float], b: list[float]) -> int:
        sa, sb = sketch([a, b]).signatures
        return sum(x != y for x, y in zip(sa, sb, strict=True))

    near = [distance(*_pair_at(0.93, rng)) for _ in range(300)]
    far = [distance(rng.standard_normal(384).tolist(), rng.standard_normal(384).tolist()) for _ in range(300)]
    assert sum(d <= bound for d in near) >= 299  # a true near duplicate is almost never dropped
    assert all(d > bound for d in far)  # an unrelated band match never reaches the vector check


def test_the_64_bit_prefix_bound_keeps_pairs_at_the_threshold_and_drops_nearly_all_unrelated_ones():
    """The band index carries only the signature's first 64 bits (migration 0014)."""
    import numpy as np
    from contextos.lsh import PREFIX_BITS, max_hamming, signature_prefix, sketch

    # 64p = 7.67; σ = sqrt(64 p (1-p)) = 2.60; 7.67 + 4σ = 18.1 → 19
    bound = max_hamming(0.93, bits=PREFIX_BITS)
    assert bound == 19
    rng = np.random.default_rng(5)

    def distance(a: list[float], b: list[float]) -> int:
        sa, sb = (signature_prefix(s) for s in sketch([a, b]).signatures)
        return bin((sa ^ sb) & ((1 << 64) - 1)).count("1")

    near = [distance(*_pair_at(0.93, rng)) for _ in range(300)]
    far = [distance(rng.standard_normal(384).tolist(), rng.standard_normal(384).tolist()) for _ in range(300)]
    assert sum(d <= bound for d in near) >= 299
    assert sum(d > bound for d in far) >= 298  # the few that pass are then checked with the exact cosine


def test_a_signature_prefix_is_every_fourth_bit_as_a_signed_bigint():
    from contextos.lsh import signature_prefix

    assert signature_prefix("0" * 252 + "1000") == 1
    assert signature_prefix("0" * 252 + "0111") == 0
    assert signature_prefix("1" + "0" * 255) == -(1 << 63)
    assert signature_prefix("1" * 256) == -1
    assert signature_prefix("1000" * 64) == -1


def test_migration_0014_backfills_the_prefix_with_the_sql_the_code_defines():
    from contextos.lsh import signature_prefix_sql
    from contextos.store.dialect import get_dialect

    sql = "\n".join(text for v, _, text in get_dialect("postgres").render_migrations(384) if v == 14)
    assert f"signature64 = {signature_prefix_sql('signature')}" in sql


def test_labels_that_differ_only_by_unicode_form_share_one_key():
    plain = norm_key("Café deployment fix", MODIFIERS)
    assert norm_key("Cafe\u0301 deployment fix", MODIFIERS) == plain  # NFD accent
    assert norm_key("Ｃａｆé ｄｅｐｌｏｙｍｅｎｔ ｆｉｘ", MODIFIERS) == plain  # full-width
    assert norm_key("Café deploy\u200bment fix", MODIFIERS) == plain  # zero-width space
    assert norm_key("Café deployment \ufb01x", MODIFIERS) == plain  # the "fi" ligature
    assert norm_key("Café deployment fix\ufeff", MODIFIERS) == plain  # a byte-order mark


def test_acronyms_and_initials_read_full_width_letters_as_plain_ones():
    from contextos.normalization import acronyms, initials

    assert acronyms("ＧＲＰＯ training") == ["grpo"]
    assert initials("Ｇroup Relative Policy Optimization") == "grpo"


@pytest.mark.parametrize(
    ("label", "text", "name"),
    [
        # names: a digit or an inner capital in the head word, or the head capitalised mid-sentence
        ("Python 3.9", "On 2026-04-29, support for Python 3.9 ended.", True),
        ("May 17th", "If 'retries' is set, then allow retries.", True),
        ("AWS", "AWS doesn't follow its own spec.", True),
        ("NumPy arrays", "special handling of NumPy arrays", False),  # the head is "arrays"
        ("GitHub", "Source code is publicly available on GitHub.", True),
        ("Tidelift Subscription", "Available as part of the Tidelift Subscription.", True),
        ("Caroline", "The user said: Wow, that's cool, Caroline!", True),
        # common nouns: a lower-case head, or a capital only where a sentence (or the label) starts
        ("Installation", "pip install charset-normalizer -U", False),
        ("Performance", "Compared with other Python validators: 138x faster.", False),
        ("Python package", "attrs is the Python package that brings back the joy of classes.", False),
        ("Hard work", "The user said: Hard work pays off.", False),
        ("Dance studio", "The user said: I'm starting a dance studio.", False),
        ("Configuration system", "The most similar config system we're aware of is Gin.", False),
        ("Caching method", "Caching is on by default.", False),  # generic modifiers aside, the head is "Caching"
        ("February", "Released on February 1, 2021.", False),  # a month alone recurs
        ("Schema", "📦 Schema bundling into documents", False),  # a bullet starts anew
        ("Optional", "`timeout` - Optional.", False),
    ],
)
def test_a_label_names_one_thing_or_is_a_common_noun(label, text, name):
    assert names_one_thing(label, text, ["method", "system"]) is name
