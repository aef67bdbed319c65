from contextos.query_analysis import analyze, detect_intent, key_phrases


def test_intent_comes_from_lexical_triggers():
    assert detect_intent("why does the importer crash on empty files?") == "debug"
    assert detect_intent("ideas for faster onboarding") == "brainstorm"
    assert detect_intent("what did we decide about pricing") == "recall"
    assert detect_intent("pricing page copy") == "default"


def test_key_phrases_are_content_runs_longest_first_and_at_most_five():
    assert key_phrases("how do we roll back the blue green deployment quickly?")[0] == "blue green deployment quickly"
    many = key_phrases("alpha, beta, gamma, delta, epsilon, zeta, eta")
    assert len(many) == 5


def test_synonyms_expand_a_phrase_from_the_data_table():
    analysis = analyze("the login bug")
    [phrase] = analysis.phrases
    assert phrase == "login bug"
    assert {"authentication", "error", "exception"} <= set(analysis.terms(phrase))
