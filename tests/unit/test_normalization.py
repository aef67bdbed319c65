from contextos.normalization import estimate_tokens, norm_key, normalize_text

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
