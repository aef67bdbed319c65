-- 0007: indexes the read path needs at 100k memories.
-- always_load memories are read on every context query: a partial index makes that a lookup.
CREATE INDEX IF NOT EXISTS memories_always_load
    ON memories (tenant_id) WHERE always_load AND state = 'active' AND tier = 'hot';
