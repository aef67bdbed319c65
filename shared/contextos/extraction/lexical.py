"""A cheap lexical splitter for short texts: runs of content words between stopwords and verbs.

The read path's query analysis uses it to pull key phrases out of a query in microseconds, with
no model to load in the API function. Document and conversation extraction do not use it: they
run on spaCy's parser (``contextos.extraction.local``).
"""

from __future__ import annotations

import re

from contextos.stopwords import STOPWORDS

# Common verbs (with their inflections) end a phrase: without a POS tagger they are the
# main source of ragged labels ("reinforcement raises memory").
_VERB_STEMS = """
    add allow apply ask become begin bring build call carry catch cause change check choose come disable enable
    handle improve prevent protect switch trigger
    contain create cut decay decide define depend describe design drop expect explain fade fall
    feel find finish follow give go grow happen help hold include increase inject keep know lead
    learn leave let live look lose match mean meet miss move need note offer open pay play
    provide put raise rank reach read receive reduce remain remember report require return run
    save say see seem send serve set show start stay stop store suggest support take talk tell
    tend think try turn understand want watch work write
    """.split()


def _inflections(stem: str) -> set[str]:
    ed = stem + ("d" if stem.endswith("e") else "ed")
    ing = (stem[:-1] if stem.endswith("e") and stem != "see" else stem) + "ing"
    s = stem + ("es" if stem.endswith(("s", "sh", "ch", "x")) else "s")
    return {stem, s, ed, ing}


VERBS = frozenset(form for stem in _VERB_STEMS for form in _inflections(stem)) | frozenset(
    """
    began begun brought built came chose chosen fell felt found gave given gone grew grown held
    kept knew known led left lost made meant met paid ran read said saw seen sent set showed
    shown took taken told thought wrote written
    """.split()
)
_TOKEN = re.compile(r"[A-Za-z][A-Za-z0-9+#'’\-]*|\d+(?:\.\d+)?|[^\sA-Za-z0-9]")


def content_runs(sentence: str) -> list[list[str]]:
    """Maximal runs of content words between stopwords and punctuation."""
    runs: list[list[str]] = []
    current: list[str] = []
    for token in _TOKEN.findall(sentence):
        word = token.strip("'’-")
        lower = word.lower()
        if not word or not word[0].isalnum() or lower in STOPWORDS or lower in VERBS or lower.isdigit():
            if current:
                runs.append(current)
            current = []
            continue
        current.append(word)
    if current:
        runs.append(current)
    return runs
