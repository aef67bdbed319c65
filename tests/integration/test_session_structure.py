"""Conversation structure on the read path: turns of one session are linked to their neighbours
(as graph edges the walk follows), and a conversation memory shows when it was said."""

from datetime import UTC, datetime, timedelta

from contextos import container
from contextos.current_settings import get_settings
from contextos.decay import decay_rate
from contextos.models import BASE_TRUST, ContextRequest, MemoryCandidate, Provenance
from contextos.services.retrieval import RetrievalService
from contextos.store.stores import Stores

from tests.memory_writer import add_memories

TURNS = [
    "Caroline: I went to the LGBTQ support group yesterday.",
    "Melanie: How did it feel?",
    "Caroline: It was powerful, the stories were so inspiring.",
    "Melanie: I am painting a lake sunrise this week.",
]


def _store(weight: float) -> Stores:
    settings = get_settings()
    return Stores.over(
        container.database(), settings.decay, settings.merge.model_copy(update={"session_neighbour_weight": weight})
    )


def _turns(embedder, texts: list[str], first: int) -> list[MemoryCandidate]:
    rate = decay_rate(5, "event", get_settings().decay)
    return [
        MemoryCandidate(
            norm_key=f"turn-{first + n}",
            label=f"D1:{first + n}",
            definition=text,
            type="event",
            importance=5,
            embedding=vector,
            decay_rate=rate,
            provenance=Provenance.user_turn,
            base_trust=BASE_TRUST[Provenance.user_turn],
        )
        for n, (text, vector) in enumerate(zip(texts, embedder.embed(texts), strict=True))
    ]


def _edges(tenant: str) -> set[tuple[str, str, float]]:
    with container.database().tenant_tx(tenant) as conn:
        rows = conn.execute(
            """SELECT s.label AS a, d.label AS b, r.weight FROM relationships r
               JOIN memories s ON s.id = r.src_id JOIN memories d ON d.id = r.dst_id
               WHERE r.tenant_id = %s AND r.type = 'related'""",
            [tenant],
        ).fetchall()
    return {(r["a"], r["b"], r["weight"]) for r in rows}


def test_each_turn_is_linked_to_its_sessions_previous_turn_across_writes(configured, tenant, local_embedder):
    store = _store(0.8)
    add_memories(
        store, tenant, _turns(local_embedder, TURNS[:2], 1), embedder_id="t", session_id="s1", message_seqs=[1, 2]
    )
    # A later write of the same session links its first turn to the last one already stored; another
    # session's turns are not linked to these.
    add_memories(
        store, tenant, _turns(local_embedder, TURNS[2:], 3), embedder_id="t", session_id="s1", message_seqs=[3, 4]
    )
    add_memories(
        store, tenant, _turns(local_embedder, ["Other session."], 9), embedder_id="t", session_id="s2", message_seqs=[1]
    )
    assert _edges(tenant) == {("D1:1", "D1:2", 0.8), ("D1:2", "D1:3", 0.8), ("D1:3", "D1:4", 0.8)}


def test_no_links_at_weight_zero(configured, tenant, local_embedder):
    add_memories(
        _store(0.0),
        tenant,
        _turns(local_embedder, TURNS, 1),
        embedder_id="t",
        session_id="s1",
        message_seqs=[1, 2, 3, 4],
    )
    assert _edges(tenant) == set()


def test_a_conversation_memory_shows_when_it_was_said(configured, tenant, local_embedder):
    said = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    add_memories(
        _store(0.0),
        tenant,
        _turns(local_embedder, TURNS, 1),
        embedder_id="t",
        at=[said + timedelta(seconds=30 * n) for n in range(len(TURNS))],
        session_id="s1",
        message_seqs=[1, 2, 3, 4],
    )
    service = RetrievalService(settings=get_settings(), store=container.reads(), embedder=local_embedder)
    request = ContextRequest(query="When did Caroline go to the support group?", dry_run=True)
    result = service.context(tenant, request)
    group = next(m for m in result.memories if m.label == "D1:1")
    assert group.said_at == said
    assert "- **D1:1** (event, said 2023-05-08): Caroline: I went to the LGBTQ support group" in result.context
    as_json = service.context(tenant, request.model_copy(update={"format": "json"})).context
    assert '"said_at": "2023-05-08T13:56:00+00:00"' in as_json
