-- 0010: the memory lifecycle (S5): the Weibull policy's parameters, cold stubs and what the scan
-- finds by index (forgotten and superseded memories to archive, scratch memories to expire).

-- Weibull rows decay as S0·exp(−(days/η)^k): η (decay_scale, days) grows with access_count and is
-- recomputed whenever the anchor moves; k is decay_shape. Exponential rows ignore both.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS decay_scale double precision;
ALTER TABLE memories ADD COLUMN IF NOT EXISTS decay_shape double precision;

-- A cold stub keeps its vector (searchable = false, so no hot search sees it) for the cold search
-- that reactivates it; a partial btree finds a tenant's cold vectors without touching hot ones.
ALTER TABLE memory_vectors ADD COLUMN IF NOT EXISTS cold boolean NOT NULL DEFAULT false;
CREATE INDEX IF NOT EXISTS memory_vectors_cold ON memory_vectors (tenant_id) WHERE cold;

-- What archival walks in keyset order: hot memories that are forgotten or superseded.
CREATE INDEX IF NOT EXISTS memories_archivable
    ON memories (tenant_id, id) WHERE tier = 'hot' AND (band = 'forgotten' OR state = 'superseded');

-- Scratch memories expire: by their own expires_at, or by the configured TTL after creation.
CREATE INDEX IF NOT EXISTS memories_expires_at
    ON memories (tenant_id, expires_at) WHERE expires_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS memories_scratch_created
    ON memories (tenant_id, created_at) WHERE type = 'scratch' AND expires_at IS NULL;

-- Reminders are listed per tenant, open first, newest first.
CREATE INDEX IF NOT EXISTS reminders_open
    ON reminders (tenant_id, opened_at DESC) WHERE acknowledged_at IS NULL;

-- A memory's history goes to cold storage with it: its audit entries, found by memory.
CREATE INDEX IF NOT EXISTS audit_log_memory ON audit_log (tenant_id, memory_id) WHERE memory_id IS NOT NULL;
