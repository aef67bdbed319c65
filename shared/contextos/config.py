"""The configuration's plain section models and their defaults (the environment is read by
``contextos.settings.Settings``, through ``contextos.current_settings.get_settings``).

Every number the spec calls a default lives here, overridable by ``CONTEXTOS_*`` environment
variables (nested with ``__``, e.g. ``CONTEXTOS_RETRIEVAL__MAX_MEMORIES=30``). Nothing reads the
environment at import time.
"""

from typing import Annotated, Literal

from pydantic import Field

from contextos.modelbase import BaseModel

Dialect = Literal["postgres", "cockroach"]


DecayPolicyName = Literal["exponential", "weibull"]


class WeibullSettings(BaseModel):
    """S5 alternative policy: freshness = exp(−(days/η)^shape), η = base · min(1 + step·accesses, cap)."""

    shape: float = 0.8
    scale_base_days: float = 7.0
    scale_access_step: float = 0.5
    scale_cap: float = 5.0
    archive_below: float = 0.15


class DecaySettings(BaseModel):
    """S5 decay: the exponential policy (daily λ by importance, scaled per type), bands, reinforcement,
    and which policy (exponential or Weibull) each tenant uses."""

    rate_high_importance: float = 0.10  # importance 8-10
    rate_mid_importance: float = 0.15  # importance 5-7
    rate_low_importance: float = 0.20  # importance 1-4
    type_multipliers: dict[str, float] = Field(
        default_factory=lambda: {"fact": 0.5, "rule": 0.25, "preference": 0.75, "event": 1.5}
    )
    initial_strength: float = 1.0
    merge_boost: float = 0.3  # a key-match merge reinforces like an access
    reinforce_keep: float = 0.7  # S <- 0.7 S + 0.3
    band_strong: float = 0.70
    band_fading: float = 0.40
    band_forgotten: float = 0.10
    # Which policy new memories of a tenant decay by; a memory keeps the policy it was created with.
    policy: DecayPolicyName = "exponential"
    tenant_policies: dict[str, DecayPolicyName] = Field(default_factory=dict)  # tenant id -> policy
    weibull: WeibullSettings = Field(default_factory=WeibullSettings)

    def policy_for(self, tenant_id: str) -> DecayPolicyName:
        return self.tenant_policies.get(tenant_id, self.policy)

    def forgotten_below(self, policy: str) -> float:
        """The strength under which a memory is forgotten (and archived): per policy."""
        return self.weibull.archive_below if policy == "weibull" else self.band_forgotten


class LifecycleSettings(BaseModel):
    """S5 scan and cold storage knobs."""

    batch_size: int = 5000  # memories per keyset batch (one transaction each)
    archive_batch_size: int = 500  # memories per cold object (one S3 PUT, one transaction)
    superseded_archive_after_days: float = 30.0  # superseded this long ago: moved to cold storage
    scratch_ttl_hours: float = 24.0  # scratch memories without their own expires_at live this long
    cold_prefix: str = "cold/"
    reactivation_cosine: float = 0.80  # a cold stub this close to a query comes back
    reactivation_strength: float = 0.5
    reactivation_max_per_query: int = 20  # as many as a context holds (retrieval.max_memories): S5 demotes, never loses
    max_reminders_listed: int = 200
    # S6.2's text search leaves out the words this share of a tenant's hot memories hold (near-zero
    # BM25 weight, milliseconds of posting list each); only for tenants this large, recounted each scan
    common_lexeme_share: float = 0.05
    common_lexeme_min_memories: int = 20_000
    # BM25's statistics (migration 0016), recounted each scan for tenants this large: the mean
    # length, and the document frequency of every lexeme at least this many memories hold (rarer
    # ones, and every lexeme of a smaller tenant, are counted live by the search; keep this below
    # retrieval.bm25_df_live_max so a live count is never cut short)
    text_stats_min_memories: int = 5_000
    text_stats_min_docs: int = 20
    # A tenant with this many hot memories gets an ANN index of its own (store/vector_indexes.py),
    # built online by the scan; below ``vector_index_drop_below`` it loses it (hysteresis). At most
    # ``vector_index_max_builds`` builds per scan: a build holds a core for seconds to minutes.
    vector_index_min_memories: int = 5_000
    vector_index_drop_below: int = 2_500
    vector_index_max_builds: int = 4


class StandardRecipe(BaseModel):
    """S6.4: relevance = 0.4·semantic + 0.3·strength + 0.3·recency, semantic = 0.5·vector +
    0.3·text + 0.2·graph."""

    kind: Literal["standard"] = "standard"
    weight_semantic: float = 0.4
    weight_strength: float = 0.3
    weight_recency: float = 0.3
    semantic_vector: float = 0.5
    semantic_text: float = 0.3
    semantic_graph: float = 0.2


class SignalWeights(BaseModel):
    """Weights of the six signals of the intent-adaptive recipe."""

    semantic: float
    bm25: float
    graph: float
    recency: float
    importance: float
    frequency: float


class IntentAdaptiveRecipe(BaseModel):
    """S6.4's second profile: six signals weighted per query intent."""

    kind: Literal["intent_adaptive"] = "intent_adaptive"
    profiles: dict[str, SignalWeights] = Field(
        default_factory=lambda: {
            "debug": SignalWeights(semantic=0.20, bm25=0.30, graph=0.30, recency=0.10, importance=0.05, frequency=0.05),
            "brainstorm": SignalWeights(
                semantic=0.30, bm25=0.05, graph=0.05, recency=0.25, importance=0.30, frequency=0.05
            ),
            "default": SignalWeights(
                semantic=0.30, bm25=0.15, graph=0.10, recency=0.15, importance=0.20, frequency=0.10
            ),
        }
    )
    frequency_saturation: int = 20  # access count at which the frequency signal reaches 1


class FusionRecipe(BaseModel):
    """Rank fusion: the three searches' scores are not on one scale (a cosine, a text rank, a
    walk weight), so each search's *ranking* of the candidate pool counts instead (reciprocal
    rank, k = ``rrf_k``): semantic = Σ wₘ/(k + rankₘ) / Σ wₘ/(k + 1) over the searches that
    scored the candidate; relevance then weighs semantic, strength and recency as the standard
    recipe does. The graph walk brings candidates into the pool (each is then ranked by its
    cosine too) but its weight does not rank them by default: its ties (a shared session links
    every turn at 0.3) are noise to a ranking, and weighting it at 0.25 cost 3.8 points of LoCoMo
    R@10 on four conversations (docs/decisions.md)."""

    kind: Literal["fusion"] = "fusion"
    rrf_k: int = 60
    weight_semantic: float = 0.4
    weight_strength: float = 0.3
    weight_recency: float = 0.3
    semantic_vector: float = 1.0
    semantic_text: float = 1.0
    semantic_graph: float = 0.0


class RelevanceRecipe(BaseModel):
    """Relevance gates (S6.4): semantic = w_t·text/max_text + w_v·vector/max_vector + w_g·graph, each
    search's score divided by its best in the query's own candidate pool (score-level fusion: the
    BM25 and cosine scales differ per query); then relevance = semantic · (1 − gate + gate·fresh),
    fresh = a mix of strength and recency. So strength and recency re-order memories of comparable
    relevance, and cost a memory at most ``gate`` of its score: never enough for a recent,
    irrelevant memory to outrank old, relevant evidence."""

    kind: Literal["relevance"] = "relevance"
    semantic_text: float = 0.5
    semantic_vector: float = 0.5
    semantic_graph: float = 0.0
    # Sharing an S9 community with a top hit (1 or 0; the older recipes read it inside graph)
    semantic_community: float = 0.0
    gate: float = 0.1
    fresh_strength: float = 0.5  # fresh = this · strength + (1 − this) · recency
    # The same subject stated twice (cosine between the two memories at least this), the fresher
    # one (strength higher by ``same_subject_strength_gap``) goes first unless the older one is
    # more than ``same_subject_margin`` more relevant: an update outranks what it updates. Off
    # (None) by default: at 0.5 the stale-distractor set reached 0.967 but LoCoMo's real timeline
    # fell from 65.2 to 58.3 R@10 (same-session turns are that close with MiniLM).
    same_subject_cosine: float | None = None
    same_subject_strength_gap: float = 0.3
    same_subject_margin: float = 0.5


Recipe = Annotated[StandardRecipe | IntentAdaptiveRecipe | FusionRecipe | RelevanceRecipe, Field(discriminator="kind")]


def default_recipes() -> dict[str, Recipe]:
    return {
        "standard": StandardRecipe(),
        "intent_adaptive": IntentAdaptiveRecipe(),
        "fusion": FusionRecipe(),
        "relevance": RelevanceRecipe(),
    }


class RetrievalSettings(BaseModel):
    """S6 knobs: recipes (weights as data), budgets and search breadth."""

    recipes: dict[str, Recipe] = Field(default_factory=lambda: default_recipes())
    default_recipe: str = "relevance"

    vector_k: int = 20
    text_k: int = 10  # per key phrase
    text_match_cap: int = 50  # matches ranked per query form of a phrase (bounds broad phrases)
    graph_seeds: int = 10  # top hits of each of the vector and text searches that seed the walk
    graph_hops: int = 2
    graph_fall: float = 0.5  # weight multiplier per hop (times the edge's own weight)
    graph_shared_source_weight: float = 0.3  # implicit edge: two memories from one document/session
    graph_k: int = 20
    max_pinned: int = 20  # always_load memories read into every context (S10), most important first
    # The read path hands work between two threads; at CPython's default 5 ms a thread could wait
    # that long for the other's Python to yield the GIL (measured: the Python part's p95 6.4 ms → 1.6)
    thread_switch_interval_s: float = 0.0005
    hnsw_ef_search: int = 100
    exact_scan_max_rows: int = 20_000  # below this many hot rows in scope, scan exactly (docs/design.md, Appendix A)
    scope_size_cache_s: float = 30.0  # how long a process trusts a tenant's hot count for that choice
    recency_rate_per_hour: float = 0.1
    multi_method_bonus: float = 0.05
    softmax_temperature: float = 0.1
    fading_relevance_floor: float = 0.35  # fading memories need at least this vector similarity
    max_memories: int = 20
    max_share_per_source: float = 0.6
    token_budget: int = 1500
    l2_excerpts: int = 2  # source excerpts shown under an L2 memory
    l2_excerpt_chars: int = 300
    l2_excerpt_pool: int = 16  # a candidate's excerpts read, of which those matching the query are shown
    # BM25 text search (migration 0016): memories returned, candidates scored (the bound checked
    # against the exact ranking by benchmarks/retrieval.py), and its constants.
    bm25_k: int = 20
    bm25_cap: int = 400
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    bm25_extra_weight: float = 0.5
    bm25_df_live_max: int = 1000
    # S5 forgetting demotes: a fading, critical or forgotten memory (a cold stub too) stays a
    # candidate when it is among the query's best evidence by relevance alone: at least this share
    # of the best candidate's semantic score, and found by the text search or this close by cosine.
    demoted_relevance_share: float = 0.5
    demoted_min_cosine: float = 0.35
    cold_k: int = 10  # cold stubs the vector search and the text search each bring into the pool
    # S6 relevance floor. A memory's calibrated relevance is a logistic of its absolute evidence (its
    # cosine to the query, and its BM25 score over the tenant's own statistics, not divided by the
    # query's best match), so it reads the same in every query and tenant; the coefficients were
    # fitted by benchmarks/abstention.py on its declared calibration split. What falls below the floor
    # is not injected; a request's ``min_relevance`` overrides it (0: nothing is cut).
    relevance_intercept: float = -4.84
    relevance_cosine: float = 9.93
    relevance_bm25: float = 2.57  # per unit of log(1 + raw BM25)
    relevance_floor: float = 0.49
    # Whether a query is answered at all reads its best candidate against the tenant's size: the
    # best of N unrelated memories looks more relevant the larger N is, so the odds its calibrated
    # relevance must reach grow with N (``exp(abstain_log_odds) * (N / abstain_size_reference)
    # ** abstain_size_slope``, never below ``abstain_min_relevance``). A small chat answers a
    # question its turns barely match; a tenant of thousands needs more. Chosen on the abstention
    # benchmark's tenants and the conversation suite's tune split (docs/decisions.md). A query that
    # clears the bar keeps every candidate at or above the lower of the bar and ``relevance_floor``.
    abstain_log_odds: float = -1.5
    abstain_size_reference: int = 60
    abstain_size_slope: float = 1.0
    abstain_min_relevance: float = 0.21  # the bar never drops below this, however small the tenant
    # A kept turn that says a correction ranks above what was said before it sharing this many
    # content words with it (`contextos.scoring.corrections_first`); 0 turns it off.
    correction_min_shared: int = 2
    floor_exempt_types: list[str] = Field(default_factory=lambda: ["rule"])  # like always_load: never cut
    near_misses_per_reason: int = 5  # a dry run lists at most this many left-out candidates per reason

    def recipe(self, name: str | None) -> StandardRecipe | IntentAdaptiveRecipe | FusionRecipe | RelevanceRecipe:
        """The named recipe (the default when None); an unknown name is a clear error."""
        key = name or self.default_recipe
        if key not in self.recipes:
            raise KeyError(key)
        return self.recipes[key]


class ExtractionSettings(BaseModel):
    """S4 step 3-4 knobs for the extractor and validation."""

    window_tokens: int = 12_000
    max_calls_per_document: int = 40  # beyond this a document fails with a clear reason
    max_concepts_per_call: int = 12
    local_max_concepts: int = 60  # the local extractor's ceiling; its count follows the document's length
    local_definition_chars: int = 700  # a local concept keeps up to this much of the document's own text
    embedded_definition_chars: int = 400  # the head of a definition that goes into its vector (cost ~ length²)
    min_definition_chars: int = 30
    # a document's passages kept verbatim beside its concepts (``contextos.passages``)
    passage_chars: int = 600
    passage_min_words: int = 5
    generic_modifiers: list[str] = Field(
        default_factory=lambda: [
            "system",
            "approach",
            "method",
            "methods",
            "technique",
            "framework",
            "model",
            "process",
            "strategy",
            "concept",
            "mechanism",
        ]
    )


class MergeSettings(BaseModel):
    """S4 step 7: when a new concept joins an existing memory instead of creating one."""

    near_duplicate_cosine: float = 0.93  # nearest memory of the same type at or above this merges
    # A common noun ("Installation", "Hard work") is each source's own: its key carries the document or
    # session it came from, so only names merge by key across sources (benchmarks/merge_precision.py).
    # True: every key merges across sources, as before #41 (the benchmark's baseline).
    common_nouns_across_sources: bool = False
    settle_batch: int = 200  # fresh vectors moved into the ANN index after each document
    source_text_chars: int = 20_000  # a memory's searchable source excerpts, all its sources together
    related_edge_weight: float = 0.5
    related_edge_step: float = 0.25
    # A turn stored as its own memory is linked to its session's previous turn at this weight (0: no link)
    session_neighbour_weight: float = 0.0


class ReportSettings(BaseModel):
    """S9 health score and governance report: weights, windows, thresholds and report sizes."""

    # Health score (0-100): component weights sum to 1.
    weight_coverage: float = 0.25
    weight_efficiency: float = 0.25
    weight_freshness: float = 0.20
    weight_balance: float = 0.15
    weight_cleanliness: float = 0.15
    window_days: int = 14  # coverage and efficiency look at the context_log of this many days
    efficiency_ideal_low: float = 0.50  # tokens used / budget: full marks inside [low, high]
    efficiency_ideal_high: float = 0.80
    efficiency_score_at_full: float = 0.5  # a budget used to the last token scores this (linear from high)
    balance_types: list[str] = Field(
        default_factory=lambda: ["problem", "decision", "fact", "entity", "event", "preference", "code"]
    )  # the entropy is normalized by ln(max(len(balance_types), types present))

    # Governance report.
    decay_candidate_strength: float = 0.40  # current strength below this (the critical band) is a candidate
    conflict_min_cosine: float = 0.80  # similar enough to be about the same thing, judged for contradiction
    conflict_judge_max_pairs: int = 200  # judge calls per tenant and run (the most similar pairs first)
    similar_pairs_max: int = 20_000  # similar pairs read per run (most similar first): bounds both sections
    consolidation_same_type: bool = True  # near duplicates must share a type (as merges do)
    lsh_bucket_max_members: int = 200  # LSH buckets larger than this are skipped (bounds the pair join)
    god_node_min_degree: int = 10  # explicit edges (either direction, active endpoints)
    god_node_max_importance: int = 4
    implicit_min_shared: int = 2  # memories sharing >= this many sources, or tags, get an implicit edge
    implicit_edge_weight: float = 0.5
    implicit_source_max_members: int = 200  # a source or tag with more memories adds no implicit edges
    community_max_edges: int = 100_000  # Louvain input cap: above it the heaviest edges are kept
    community_seed: int = 42
    community_resolution: float = 1.0
    community_min_size: int = 2  # smaller communities are not stored (they carry no signal)
    community_bonus: float = 0.08  # graph score of a candidate sharing a community with a top hit
    community_top_hits: int = 5  # top hits of the vector and of the text search whose communities count
    report_items: int = 50  # rows per report section
    community_sample_labels: int = 5
    reports_kept: int = 30  # stored governance reports per tenant


class ConversationSettings(BaseModel):
    """S8: when a session's buffered messages are flushed into memory, and how they are read."""

    flush_messages: int = 50  # unflushed messages that trigger a flush on append
    idle_flush_s: int = 15 * 60  # a session idle this long is flushed by the sweeper
    sweep_every_s: int = 5 * 60  # the sweeper's schedule (EventBridge rate; the local scheduler)
    sweep_batch: int = 500  # sessions claimed per tenant per sweeper statement
    resend_after_s: int = 60  # a claimed flush still unsent after this long is sent again by the sweeper
    requeue_after_s: int = 3600  # a sent flush untouched this long (its message lost, e.g. in the DLQ) is sent again
    stale_processing_s: int = 600  # a flush held longer than this by a worker that died is taken over
    max_attempts: int = 3  # receives before a flush ends as failed (the queue's DLQ threshold)
    min_concepts: int = 3  # asked of the model; fewer only when the log holds fewer
    max_concepts: int = 10  # kept per flush, most important first
    max_message_chars: int = 32_000  # one message's content
    max_session_id_chars: int = 200
    # A message's ``occurred_at``: at most this far ahead of the server's clock (client skew), and
    # at most this far back (imported history; older turns would only ever be forgotten).
    occurred_at_skew_s: int = 300
    turn_min_words: int = 3  # an uncited turn shorter than this (small talk) is not kept as a memory
    follows_chars: int = 240  # of the turn a kept turn follows, searchable with it (what it answers)
    max_facts: int = 60  # facts an extractor states per flush beyond its concepts (S8), the most important first
    # a concept stating more turns of one flush than this is a hub (a speaker, a running theme): it
    # points at them but shows none as its excerpts, since a hub's text fills across sessions
    hub_turns: int = 4
    occurred_at_max_age_days: int = 3650
    recent_turns: int = 6  # turns of the session that inform a context query's analysis
    recent_turn_chars: int = 2_000  # of each recent turn, for query analysis
    # system turns configure the agent; they are kept in the log but not distilled into memories
    extract_roles: list[str] = Field(default_factory=lambda: ["user", "assistant", "tool", "third_party"])


def _default_base_trust() -> dict[str, float]:
    from contextos.models import BASE_TRUST

    return {p.value: t for p, t in BASE_TRUST.items()}


class GovernanceSettings(BaseModel):
    """S7: what gets in. Base trust per provenance, the trust gate, the contradiction gate and
    the composite trust computed at read time."""

    base_trust: dict[str, float] = Field(default_factory=_default_base_trust)
    trust_threshold: float = 0.5  # below it a candidate goes to the review queue, nowhere else
    # Text that addresses the agent (prompt injection) lowers the trust of the candidate that
    # carries it, judged per sentence: a directive to the agent costs the full penalty, text that
    # only calls out to an agent, or only describes an injection, costs weak_signal_strength of it.
    injection_penalty: float = 0.5
    weak_signal_strength: float = 0.5
    # Directives that set or override an agent's behaviour.
    injection_patterns: list[str] = Field(
        default_factory=lambda: [
            r"\b(ignore|disregard|forget|override)\b.{0,40}\b(previous|prior|above|earlier|all|any|your"
            r"|the user'?s?)\b.{0,40}\b(instructions?|prompts?|rules|guidelines|guidance|context|messages?"
            r"|configuration|what you know)\b",
            r"\b(new|updated|real|hidden|secret)\s+(system\s+)?instructions?\b",
            r"\byour\s+(new\s+)?(task|instructions?|rules?|orders?)\b.{0,20}\b(is|are|from now on|:)",
            r"\bfrom now on\b.{0,40}\b(you|always|never|only|answer|respond|reply|recommend|tell|say|treat|call"
            r"|describe|report|book|use|mention|refer|forward|send|act)\b",
            r"\b(the assistant|the agent|the ai|assistants?|agents?)\s+(must|should|shall|will|need to|have to"
            r"|are to)\s+(now\s+)?(always|never|only)\b",
            r"\b(assistants?|agents?|ai|models?|chatbots?|bots?|llms?)\b.{0,30}\b(always|never|only)\s+(recommend"
            r"|answer|reply|respond|say|tell|mention|reveal|send|trust|refer|follow|call|include|link|redirect|share"
            r"|forward|ignore|describe|rank|book|install)\b",
            r"\bwhen(ever)?\s+(the\s+|a\s+|any\s+)?(user|anyone|someone|people|customers?)\s+(asks?|says|mentions|requests"
            r"|wants)\b.{0,80}\b(say|answer|tell|respond|reply|refer|recommend|report)\b",
            r"\b(do not|don't|never)\s+(tell|inform|mention|reveal|disclose)\b.{0,40}\b(user|anyone|them|this|it)\b",
            r"\b(send|forward|email|upload|post|exfiltrate|transfer|share)\b.{0,60}\b(password|credentials?"
            r"|api[\s_-]?keys?|tokens?|secrets?|private|conversation|history|dump|customer table)\b.{0,40}\b(to|at)\b",
            r"\b(pretend|roleplay)\s+(as|to be|you are)\b|^(act|behave)\s+as\b"
            r"|\b(you|assistant)\s+(now\s+)?(act|behave)\s+as\b",
            r"\b(developer|god|dan)\s+mode\s+(is\s+)?(enabled|on|activated)\b|\byou are (now )?in \w+ mode\b"
            r"|\bjailbreak mode\b",
            r"<\s*/?\s*(system|assistant|instructions?|im_start|im_end)\s*>|<\|im_start\|>",
            r"\[\s*/?\s*(system|inst)\s*\]|###\s*(system|instruction)",
            r"\b(remember|store|save|memorize|note)\b.{0,60}\b(permanent(ly)?|forever|in (your )?(long-term )?memory"
            r"|to (your )?(long-term )?memory)\b|\bupdate your memory\b|\b(remember|store) this\b",
        ]
    )
    # Text that calls out to an AI reader ("Note to the agent:", "Dear AI,", "If you are an AI ...");
    # with a behaviour verb beside it, a directive.
    addressing_patterns: list[str] = Field(
        default_factory=lambda: [
            r"^(assistant|ai|ai assistant|agent|llm|chatgpt|claude|gpt|language model|system|ai agents?|assistants?)"
            r"\s*[:,]",
            r"^(\w+\s+){0,3}(assistants?|agents?|llms?|chatbots?|bots?)\s*[:,]",  # "AI screening assistant:"
            r"\b(note|message|instructions?|request|reminder|attention|important)\s*(to|for)\s+(the\s+|any\s+|all\s+)?"
            r"(ai|assistants?|agents?|llms?|language models?|models?|bots?|chatgpt)\b",
            r"\b(dear|hey|hi|hello|attention)\s+(ai|assistants?|agents?|chatgpt|bots?|models?|llms?)\b",
            r"\bif you are an?\s+(ai|assistant|agent|language model|llm|bot|chatbot)\b",
            r"\b(ai|llm)\s+(agents?|assistants?|models?)\b.{0,20}\b(reading|processing|summari[sz]ing|parsing|crawling)\b",
            r"@assistant\b|\[assistant\]|\bto the (assistant|agent)\b|\b(reader|crawler|browsing) agents?\b",
            r"\b(assistant|agent|ai|llm) instructions?\b|\binstructions? (to|for) (assistants?|agents?|the ai)\b",
            r"\bif an? (ai|assistant|agent|llm|language model|model|bot)\b.{0,20}\b(is|are)\s+(reading|processing"
            r"|summari[sz]ing|parsing)\b",
        ]
    )
    # Standing rules and orders to "you": documentation gives them to its human readers all the
    # time ("you should never use kernel headers directly"), so without a call-out they are weak.
    weak_patterns: list[str] = Field(
        default_factory=lambda: [
            r"\bfrom now on\b",
            r"\byou\s+(must|should|shall|will|need to|have to|are to)\s+(now\s+)?(always|never|only)\b",
            r"\byou\b.{0,30}\b(always|never|only)\s+(recommend|answer|reply|respond|say|tell|mention|reveal|send"
            r"|trust|refer|follow|call|include|link|redirect|share|forward|ignore|describe|rank|book|install)\b",
            r"^(always|only)\s+(recommend|mention|say|answer|respond|reply|describe|rank|report|book|refer|tell"
            r"|include)\b",
        ]
    )
    # Words of a sentence that discusses injections or quotes one rather than making it.
    describing_patterns: list[str] = Field(
        default_factory=lambda: [
            r"\b(attacks?|attackers?|adversar(y|ies|ial)|malicious|inject(ion|ions|ed|s)?|jailbreak(s|ing)?|exploit(s|ed)?"
            r"|phishing|payloads?|threats?|vulnerab\w*|defen[cs]es?|detect\w*|mitigat\w*|sanitiz\w*|red[- ]team\w*)\b",
            r"\b(for example|for instance|e\.g\.|such as|is called|known as|researchers?|paper|study|benchmark)\b",
            r"[\"“`][^\"“”`]{4,}[\"”`]|(^|\s)['‘][^'‘’]{4,}['’](\s|[.,;:!?)]|$)",
        ]
    )
    # A source whose directive sentences are this share of all its sentences (and at least two)
    # reads as an attack as a whole: every candidate drawn from it is then signalled.
    source_taint_share: float = 0.25
    contradiction_top_k: int = 5  # nearest active memories each admitted candidate is judged against
    contradiction_similarity_floor: float = 0.6  # cosine below which two memories are not compared
    contradiction_exact_scan_max_rows: int = 2_000  # above this many hot memories, ANN (then exact if short)
    contradiction_ef_search: int = 64
    contradiction_subject_rows: int = 256  # per candidate: memories sharing a subject word that are compared
    # A neighbour at least this close (and under the judge's floor too) whose newer statement reports
    # a change to it ("moved", "now", "was rewritten") is linked, not superseded: an `updated_by`
    # pointer that the read path orders by, and a `contradicts` edge the governance report lists.
    update_similarity_floor: float = 0.5
    update_links: bool = True
    judge_concurrency: int = 4  # Bedrock judge calls (each a batch of pairs) in flight per admission
    # Judge outside the tenant lock first, then only what changed under it. None: only when the
    # judge is Bedrock (for the microsecond local judge the extra neighbour lookup costs more).
    prejudge: bool | None = None
    corroboration_step: float = 0.05
    corroboration_cap: float = 0.15
    overuse_access_count: int = 3  # accessed this often …
    overuse_freshness: float = 0.3  # … yet this stale: a penalty (S7 composite trust)
    overuse_penalty: float = 0.10
    review_page_size: int = 50
    audit_page_size: int = 1000  # rows per page when verifying the hash chain

    def trust_of(self, provenance: str) -> float:
        """Base trust of a provenance; an unknown one gets none."""
        return float(self.base_trust.get(str(provenance), 0.0))


class BedrockSettings(BaseModel):
    """Model ids for the Bedrock adapters."""

    embedding_model_id: str = "amazon.titan-embed-text-v2:0"
    embedding_dimensions: int = 1024
    extractor_model_id: str = "amazon.nova-pro-v1:0"
    judge_model_id: str = "amazon.nova-pro-v1:0"
    max_tokens: int = 4096


class EdgeSettings(BaseModel):
    """Bounds every API request body meets before it is parsed (S14)."""

    max_json_depth: int = Field(default=32, ge=2)
    max_number_chars: int = Field(default=64, ge=16)  # far below Python's 4,300-digit int limit


class LocalServerSettings(BaseModel):
    """The local stack's HTTP front (uvicorn): limits a slow or lying client cannot get around."""

    backlog: int = 2048  # the kernel's accept queue: 50 clients connecting at once never overflow it
    limit_concurrency: int = 512  # beyond this uvicorn answers 503 instead of queueing without bound
    timeout_keep_alive_s: int = 5
    header_timeout_s: float = 5.0  # a request head not complete this long after it began gets 408
    body_timeout_s: float = 15.0  # a body slower than this (or shorter than its Content-Length) gets 408
    max_body_bytes: int = 25 * 1024 * 1024  # above API Gateway's 10 MB, so the API's own limit answers
    handler_threads: int = 16
    # What a local function's Lambda context reports as its timeout: Powertools idempotency lets a
    # redelivery of a message whose worker died run again once this much time has passed.
    function_timeout_s: float = 60.0
    cors_origins: list[str] = Field(default_factory=lambda: ["http://127.0.0.1:8787", "http://localhost:8787"])
