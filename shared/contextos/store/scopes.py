"""A `ScopeFilter` as SQL: one predicate on a memories alias, with named parameters.

The one owner of what "in scope" means: the list, the scoped read path and the graph all ask here.
"""

from __future__ import annotations

from typing import Any

from contextos.scopes import Scope, ScopeFilter
from contextos.store.dialect import Dialect
from psycopg.types.json import Jsonb


def scope_predicate(alias: str, scope: ScopeFilter | None, dialect: Dialect, *, enumerates: bool = False) -> str:
    """``TRUE`` or the conjunction of the filter's fields on ``alias`` (parameters from `scope_params`).

    ``enumerates``: the statement finds a scope's rows from the filter alone (a list, the exact
    pass over a scope), which the engine may serve through its containment indexes
    (`Dialect.containment_predicates`); a statement that only checks rows it already has (search
    hits, the candidate pool) tests containment on them directly, which costs nothing like reading
    every id of a large tag."""
    if scope is None or scope.empty:
        return "TRUE"
    parts = [
        f"{alias}.{field} = %(scope_{field})s" for field in ("user_id", "agent_id", "run_id") if getattr(scope, field)
    ]
    parts += dialect.containment_predicates(
        alias, tags=bool(scope.tags), metadata=bool(scope.metadata), enumerates=enumerates
    )
    return "(" + " AND ".join(parts) + ")"


def vector_scope_predicate(alias: str, scope: ScopeFilter | None) -> str:
    """``TRUE`` or the filter's user, agent, run and tags on a memory_vectors alias (their copy,
    migration 0023); metadata is not copied, so a metadata filter also needs `scope_predicate`."""
    if scope is None or scope.empty:
        return "TRUE"
    parts = [
        f"{alias}.{field} = %(scope_{field})s" for field in ("user_id", "agent_id", "run_id") if getattr(scope, field)
    ]
    if scope.tags:
        parts.append(f"{alias}.tags @> %(scope_tags)s::text[]")
    return "(" + " AND ".join(parts) + ")" if parts else "TRUE"


def key_owner_sql(key: str) -> str:
    """`contextos.scopes.key_owner` in SQL (both dialects): the owner suffix of the merge key
    ``key``, NULL for a tenant-wide memory. Merges and supersessions compare it with
    IS NOT DISTINCT FROM, so they stay within one owner (S11: precision first)."""
    return f"(CASE WHEN strpos({key}, '@') > 0 THEN substr({key}, strpos({key}, '@')) END)"


def scope_params(scope: ScopeFilter | None) -> dict[str, Any]:
    if scope is None:
        return {}
    return {
        "scope_user_id": scope.user_id,
        "scope_agent_id": scope.agent_id,
        "scope_run_id": scope.run_id,
        "scope_tags": list(scope.tags),
        "scope_metadata": Jsonb(dict(scope.metadata)),
    }


def apply_scope(conn: Any, tenant_id: str, memory_ids: list, scope: Scope) -> None:
    """Give memories a write's scope: its user, agent and run where they have none yet, its tags
    added and its metadata merged over theirs."""
    if not memory_ids or scope.empty:
        return
    conn.execute(
        """UPDATE memories SET user_id = COALESCE(user_id, %(user)s), agent_id = COALESCE(agent_id, %(agent)s),
                  run_id = COALESCE(run_id, %(run)s),
                  tags = ARRAY(SELECT DISTINCT unnest(tags || %(tags)s::text[])),
                  metadata = metadata || %(metadata)s
           WHERE tenant_id = %(tenant)s AND id = ANY(%(ids)s)""",
        {
            "user": scope.user_id,
            "agent": scope.agent_id,
            "run": scope.run_id,
            "tags": list(scope.tags),
            "metadata": Jsonb(dict(scope.metadata)),
            "tenant": tenant_id,
            "ids": list(memory_ids),
        },
    )


def source_scope(conn: Any, tenant_id: str, document_id: Any = None, session_id: str | None = None) -> Scope:
    """The scope a document or a session was written with (empty when it has none): what the
    memories it teaches belong to."""
    if document_id is not None:
        sql = "SELECT user_id, agent_id, run_id, tags FROM documents WHERE tenant_id = %s AND id = %s"
        row = conn.execute(sql, [tenant_id, document_id]).fetchone()
    elif session_id is not None:
        sql = "SELECT user_id, agent_id, run_id, tags FROM sessions WHERE tenant_id = %s AND id = %s"
        row = conn.execute(sql, [tenant_id, session_id]).fetchone()
    else:
        row = None
    if row is None:
        return Scope()
    return Scope(user_id=row["user_id"], agent_id=row["agent_id"], run_id=row["run_id"], tags=list(row["tags"] or []))


def set_document_scope(conn: Any, tenant_id: str, document_id: Any, scope: Scope) -> None:
    """A document's own scope, as its write gave it."""
    if scope.empty:
        return
    conn.execute(
        """UPDATE documents SET user_id = %s, agent_id = %s, run_id = %s, tags = %s::text[]
           WHERE tenant_id = %s AND id = %s""",
        [scope.user_id, scope.agent_id, scope.run_id, list(scope.tags), tenant_id, document_id],
    )


def inherit_document_scope(conn: Any, tenant_id: str, document_id: Any) -> None:
    """The memories a scoped document taught take its user, agent, run (where they have none) and
    tags: one statement, nothing for an unscoped document."""
    conn.execute(
        """UPDATE memories m SET user_id = COALESCE(m.user_id, d.user_id), agent_id = COALESCE(m.agent_id, d.agent_id),
                  run_id = COALESCE(m.run_id, d.run_id), tags = ARRAY(SELECT DISTINCT unnest(m.tags || d.tags))
           FROM documents d
           WHERE d.tenant_id = %(tenant)s AND d.id = %(doc)s
             AND (d.user_id IS NOT NULL OR d.agent_id IS NOT NULL OR d.run_id IS NOT NULL OR d.tags <> '{}')
             AND m.tenant_id = d.tenant_id
             AND m.id IN (SELECT i.memory_id FROM memory_items i
                          WHERE i.tenant_id = d.tenant_id AND i.document_id = d.id)""",
        {"tenant": tenant_id, "doc": document_id},
    )


def set_session_scope(conn: Any, tenant_id: str, session_id: str, scope: Scope) -> None:
    """A session takes the scope its first scoped turn gives (later turns do not move it)."""
    if scope.empty:
        return
    conn.execute(
        """UPDATE sessions SET user_id = COALESCE(user_id, %s), agent_id = COALESCE(agent_id, %s),
                  run_id = COALESCE(run_id, %s), tags = ARRAY(SELECT DISTINCT unnest(tags || %s::text[]))
           WHERE tenant_id = %s AND id = %s""",
        [scope.user_id, scope.agent_id, scope.run_id, list(scope.tags), tenant_id, session_id],
    )


def inherit_session_scope(conn: Any, tenant_id: str, session_id: str) -> None:
    """The memories a scoped session taught take its user, agent, run (where they have none) and tags."""
    conn.execute(
        """UPDATE memories m SET user_id = COALESCE(m.user_id, s.user_id), agent_id = COALESCE(m.agent_id, s.agent_id),
                  run_id = COALESCE(m.run_id, s.run_id), tags = ARRAY(SELECT DISTINCT unnest(m.tags || s.tags))
           FROM sessions s
           WHERE s.tenant_id = %(tenant)s AND s.id = %(session)s
             AND (s.user_id IS NOT NULL OR s.agent_id IS NOT NULL OR s.run_id IS NOT NULL OR s.tags <> '{}')
             AND m.tenant_id = s.tenant_id
             AND m.id IN (SELECT i.memory_id FROM memory_items i
                          WHERE i.tenant_id = s.tenant_id AND i.session_id = s.id)""",
        {"tenant": tenant_id, "session": session_id},
    )
