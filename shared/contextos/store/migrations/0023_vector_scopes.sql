-- dialect: postgres
-- 0023: a memory's scope (user, agent, run, tags) copied onto its vector row, so a scoped vector
-- search reads one table: a small scope's vectors found through a btree on memory_vectors itself
-- (one heap visit per vector instead of an index probe into memories and another into
-- memory_vectors per id), a large scope's ANN hits filtered on the rows the index returned, and
-- cold stubs (whose memory rows keep their scope) searched within a scope too (S5, S11).
--
-- memories owns the fact; triggers keep the copy: a vector row takes its memory's scope when it is
-- written, and a change of a memory's scope columns reaches its vector row in the same statement.
-- Metadata is not copied (free-form and unbounded): a metadata filter still reads memories.
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS user_id text;
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS agent_id text;
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS run_id text;
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS tags text[] NOT NULL DEFAULT '{}';

UPDATE memory_vectors v SET user_id = m.user_id, agent_id = m.agent_id, run_id = m.run_id, tags = m.tags
FROM memories m
WHERE m.tenant_id = v.tenant_id AND m.id = v.memory_id
  AND (m.user_id IS NOT NULL OR m.agent_id IS NOT NULL OR m.run_id IS NOT NULL OR m.tags <> '{}');

-- Hot (searchable) and cold vectors of a scope; the embedding is read from the heap.
CREATE INDEX IF NOT EXISTS memory_vectors_scope_user
    ON memory_vectors (tenant_id, user_id) WHERE (searchable OR cold) AND user_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memory_vectors_scope_agent
    ON memory_vectors (tenant_id, agent_id) WHERE (searchable OR cold) AND agent_id IS NOT NULL;
CREATE INDEX IF NOT EXISTS memory_vectors_scope_run
    ON memory_vectors (tenant_id, run_id) WHERE (searchable OR cold) AND run_id IS NOT NULL;

CREATE OR REPLACE FUNCTION contextos_vector_takes_scope() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    SELECT m.user_id, m.agent_id, m.run_id, m.tags INTO NEW.user_id, NEW.agent_id, NEW.run_id, NEW.tags
    FROM memories m WHERE m.tenant_id = NEW.tenant_id AND m.id = NEW.memory_id;
    NEW.tags := coalesce(NEW.tags, '{}');
    RETURN NEW;
END
$fn$;
DROP TRIGGER IF EXISTS memory_vectors_take_scope ON memory_vectors;
CREATE TRIGGER memory_vectors_take_scope BEFORE INSERT ON memory_vectors
    FOR EACH ROW EXECUTE FUNCTION contextos_vector_takes_scope();

CREATE OR REPLACE FUNCTION contextos_scope_reaches_vector() RETURNS trigger
LANGUAGE plpgsql AS $fn$
BEGIN
    UPDATE memory_vectors v SET user_id = NEW.user_id, agent_id = NEW.agent_id, run_id = NEW.run_id, tags = NEW.tags
    WHERE v.tenant_id = NEW.tenant_id AND v.memory_id = NEW.id;
    RETURN NULL;
END
$fn$;
DROP TRIGGER IF EXISTS memories_scope_reaches_vector ON memories;
CREATE TRIGGER memories_scope_reaches_vector AFTER UPDATE OF user_id, agent_id, run_id, tags ON memories
    FOR EACH ROW
    WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id OR OLD.agent_id IS DISTINCT FROM NEW.agent_id
          OR OLD.run_id IS DISTINCT FROM NEW.run_id OR OLD.tags IS DISTINCT FROM NEW.tags)
    EXECUTE FUNCTION contextos_scope_reaches_vector();
-- dialect: cockroach
-- 0023 on CockroachDB: its vector index is prefixed by tenant_id and a scoped vector search joins
-- memories for the scope (contextos.store.scoped_reads), so the PostgreSQL variant's scope copy on
-- memory_vectors, its indexes and triggers are not created here.
SELECT 1;
-- dialect: end
