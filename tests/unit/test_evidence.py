from contextos.evidence import matching_excerpts, stems


def test_excerpts_sharing_the_querys_words_come_first_and_others_are_left_out():
    excerpts = {
        "a": ["The scheduler retries jobs.", "Write the placement log hourly.", "Nothing related here."],
        "b": ["Unrelated text about cooking."],
    }
    chosen = matching_excerpts("How often is the placement log written?", excerpts, 2)
    assert chosen == {"a": ["Write the placement log hourly."]}


def test_a_rare_word_outweighs_a_common_one():
    excerpts = {"a": ["The log is kept.", "The log ledger is kept.", "The log rotates."]}
    assert matching_excerpts("ledger log", excerpts, 1) == {"a": ["The log ledger is kept."]}


def test_words_inside_code_names_match_up_to_inflection():
    assert {"write", "jsonl"} <= stems('srsly.write_jsonl("/path/file.jsonl", data)')
    assert "write" in stems("writes")


def test_stored_stems_decide_the_match_and_missing_ones_are_stemmed_here():
    from contextos.evidence import stem_key

    excerpts = {"a": ["The placement log is written hourly.", "Unrelated cooking notes."]}
    # The stored form is what the write path computed: here it says the second excerpt matches.
    stored = {"a": [stem_key("cooking"), stem_key("placement log")]}
    assert matching_excerpts("placement log", excerpts, 1, stored) == {"a": ["Unrelated cooking notes."]}
    # A row written before the stored form (None) is stemmed at read time.
    assert matching_excerpts("placement log", excerpts, 1, {"a": [None, None]}) == {
        "a": ["The placement log is written hourly."]
    }
    assert stem_key("Writes the JSONL writer") == "jsonl write writer"
