"""A cheap lexical splitter for short texts: runs of content words between stopwords and verbs.

The read path's query analysis uses it to pull key phrases out of a query in microseconds, with
no model to load in the API function. Document and conversation extraction do not use it: they
run on spaCy's parser (``contextos.extraction.local``).
"""

from __future__ import annotations

import re

STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are aren't as at be because been
    before being below between both but by can cannot could did do does doing don't down during
    each few for from further had has have having he her here hers herself him himself his how i
    if in into is isn't it it's its itself just let me more most much must my myself no nor not
    now of off on once only or other ought our ours ourselves out over own same she should so
    some such than that that's the their theirs them themselves then there these they this those
    through to too under until up upon us very via was we were what when where which while who
    whom why will with within without would you your yours yourself yourselves one two three
    many may might every often usually always never still yet however thus therefore since e.g
    i.e etc new used use using uses like get gets got make makes made way ways thing things lot
    lots first second another able well per whenever wherever whether whose across along among
    around toward towards onto instead rather quite really almost already even ever also though
    although unless
    """.split()
)
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
