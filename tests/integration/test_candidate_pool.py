"""The candidate pool statement over real data: the S9 community flag keeps its meaning (a candidate
shares a community with a top hit other than itself), the cosines the vector search already holds
are not read again, and the read path's scores still carry every candidate's exact cosine."""

from __future__ import annotations

import uuid
from collections.abc import Sequence

import pytest
from contextos import container
from contextos.current_settings import get_settings
from contextos.models import ContextRequest
from contextos.ports.reads import PoolRequest

from tests.integration.test_reports import add, sql, unit

# The flag as the pool computed it before the top hits' communities were read once per statement:
# the reference the new statement must agree with on every candidate.
REFERENCE_FLAG = """
    SELECT m.id, EXISTS (
        SELECT 1 FROM memory_communities c
        JOIN memory_communities t ON t.tenant_id = c.tenant_id AND t.community = c.community
        WHERE c.tenant_id = m.tenant_id AND c.memory_id = m.id
          AND t.memory_id = ANY(%(top)s::uuid[]) AND t.memory_id <> m.id
    ) AS community
    FROM memories m WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(ids)s::uuid[])"""

LABELS = ["Alder", "Birch", "Cedar", "Dogwood", "Elm", "Fir"]


@pytest.fixture
def grove(configured, tenant):
    ids = add(tenant, [{"label": label, "vector": unit((n, 1.0), (10, 0.5))} for n, label in enumerate(LABELS)])
    communities = {"Alder": 1, "Birch": 1, "Cedar": 2, "Dogwood": 3, "Elm": 3}  # Fir has none
    sql(
        tenant,
        """INSERT INTO memory_communities (tenant_id, memory_id, community)
           SELECT %s, m, c FROM unnest(%s::uuid[], %s::int[]) AS p(m, c)""",
        [tenant, [ids[label] for label in communities], list(communities.values())],
    )
    return tenant, ids


def _request(
    found: list[uuid.UUID],
    *,
    top: Sequence[uuid.UUID] = (),
    known: Sequence[uuid.UUID] = (),
    stems: Sequence[str] = (),
) -> PoolRequest:
    """The read path's pool request for ``found``, with the deployed walk and excerpt settings."""
    cfg = get_settings().retrieval
    return PoolRequest(
        seeds=[],
        found=found,
        top=top,
        hops=cfg.graph_hops,
        fall=cfg.graph_fall,
        shared_source_weight=cfg.graph_shared_source_weight,
        k=cfg.graph_k,
        pinned=0,
        excerpts=cfg.l2_excerpt_pool,
        excerpt_chars=cfg.l2_excerpt_chars,
        stems=stems,
        known=known,
    )


def _pool(tenant: str, ids: dict[str, uuid.UUID], *, top: list[str], known: list[str] = ()) -> dict[str, dict]:
    request = _request(list(ids.values()), top=[ids[label] for label in top], known=[ids[label] for label in known])
    rows = container.stores().reads.candidate_pool(tenant, unit((0, 1.0)), request)
    return {r["label"]: r for r in rows}


@pytest.mark.parametrize(
    "top",
    [["Alder", "Dogwood", "Elm"], ["Birch"], ["Cedar", "Fir"], [], LABELS],
)
def test_the_community_flag_marks_exactly_the_candidates_sharing_a_community_with_another_top_hit(grove, top):
    tenant, ids = grove
    rows = _pool(tenant, ids, top=top)
    reference = sql(tenant, REFERENCE_FLAG, {"tenant": tenant, "ids": list(ids.values()), "top": [ids[t] for t in top]})
    by_id = {r["id"]: r["community"] for r in reference}
    assert {label: rows[label]["community"] for label in LABELS} == {label: by_id[ids[label]] for label in LABELS}


def test_a_top_hit_alone_in_its_community_is_not_flagged_and_its_neighbours_are(grove):
    tenant, ids = grove
    rows = _pool(tenant, ids, top=["Alder", "Dogwood", "Elm"])
    flags = {label: rows[label]["community"] for label in LABELS}
    assert flags == {"Alder": False, "Birch": True, "Cedar": False, "Dogwood": True, "Elm": True, "Fir": False}


def test_the_pool_reads_no_cosine_it_was_given_and_the_exact_one_for_the_rest(grove):
    tenant, ids = grove
    given = _pool(tenant, ids, top=[], known=["Alder", "Birch"])
    full = _pool(tenant, ids, top=[])
    assert given["Alder"]["vector_sim"] is None and given["Birch"]["vector_sim"] is None
    for label in LABELS[2:]:
        assert given[label]["vector_sim"] == full[label]["vector_sim"]
    # the vectors are unit((n, 1), (10, 0.5)) against unit((0, 1)): only Alder lies along axis 0
    assert full["Alder"]["vector_sim"] == pytest.approx(1 / 1.25**0.5, abs=1e-6)
    assert full["Cedar"]["vector_sim"] == pytest.approx(0.0, abs=1e-6)


def test_the_context_scores_every_candidate_by_its_exact_cosine_whichever_search_found_it(grove):
    tenant, _ = grove
    query = unit((0, 1.0))
    result = container.retrieval().context(tenant, ContextRequest(query="alder", dry_run=True), query_vector=query)
    exact = {
        r["memory_id"]: r["sim"]
        for r in sql(
            tenant,
            "SELECT memory_id, 1.0 - (embedding <=> %s::vector) AS sim FROM memory_vectors",
            [str(query)],
        )
    }
    assert result.memories
    for memory in result.memories:
        assert memory.score.vector == pytest.approx(max(exact[memory.id], 0.0), abs=1e-6)


# The excerpt choice as the pool made it before the match count was skipped for rows without an
# excerpt: those holding the most query stems, then the newest occurrence's, in document order.
REFERENCE_EXCERPTS = """
    SELECT items.excerpts FROM memories m
    LEFT JOIN LATERAL (
        SELECT array_agg(o.excerpt ORDER BY o.created_at DESC, o.ord)
                   FILTER (WHERE o.excerpt IS NOT NULL AND o.newest <= %(excerpts)s) AS excerpts
        FROM (
            SELECT x.excerpt, x.ord, i.created_at,
                   row_number() OVER (PARTITION BY x.excerpt IS NOT NULL
                                      ORDER BY (SELECT count(*) FROM unnest(%(stems)s::text[]) AS w(s)
                                                WHERE strpos(' ' || x.stems || ' ', ' ' || w.s || ' ') > 0)
                                               DESC, i.created_at DESC, x.ord) AS newest
            FROM memory_items i
            CROSS JOIN LATERAL (
                SELECT CASE WHEN i.definition <> m.definition
                            THEN left(i.definition, %(excerpt_chars)s) END, i.definition_stems, 0::bigint
                UNION ALL
                SELECT left(e.x, %(excerpt_chars)s), e.s, e.n
                FROM unnest(i.excerpts, i.excerpt_stems) WITH ORDINALITY AS e(x, s, n)
            ) AS x(excerpt, stems, ord)
            WHERE i.tenant_id = m.tenant_id AND i.memory_id = m.id
        ) o
    ) items ON true
    WHERE m.tenant_id = %(tenant)s AND m.id = %(id)s"""


def test_the_pool_reads_the_excerpts_holding_the_query_stems_first_as_it_always_did(configured, tenant, local_embedder):
    from contextos.evidence import stems

    from tests.integration.test_merging import candidates, store_concepts

    store = container.stores()
    filler = [f"The harbour crane number {n} lifts containers during the {n}th shift." for n in range(24)]
    first = [*filler[:20], "A quokka backoff of five minutes follows every missed window."]
    second = ["The quokka backoff doubles after three failures.", *filler[20:]]
    for definition, excerpts in (
        ("The orbit scheduler places batch jobs on idle nodes overnight.", first),
        ("The orbit scheduler retries jobs that miss their window.", second),
    ):
        (candidate,) = candidates(local_embedder, [("Orbit scheduler", definition, "fact")])
        store_concepts(store, tenant, [candidate.model_copy(update={"excerpts": excerpts})])
    (memory,) = sql(tenant, "SELECT id FROM memories WHERE label = 'Orbit scheduler' AND state = 'active'")
    cfg = get_settings().retrieval
    query_stems = sorted(stems("quokka backoff"))
    request = _request([memory["id"]], stems=query_stems)
    (row,) = store.reads.candidate_pool(tenant, unit((0, 1.0)), request)
    (reference,) = sql(
        tenant,
        REFERENCE_EXCERPTS,
        {
            "tenant": tenant,
            "id": memory["id"],
            "stems": query_stems,
            "excerpts": cfg.l2_excerpt_pool,
            "excerpt_chars": cfg.l2_excerpt_chars,
        },
    )
    assert row["excerpts"] == reference["excerpts"]
    assert len(row["excerpts"]) == cfg.l2_excerpt_pool < len(first) + len(second)
    assert sum("quokka" in e for e in row["excerpts"]) == 2  # both matching passages, whatever their age
