"""English stopwords shared by the lexical splitter (query analysis) and the L2 excerpt matcher:
one list, so a query and the excerpts stored for it are reduced to content words the same way."""

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
