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
