-- 0040: a message may say when it was said (``occurred_at``: imported history, a benchmark's real
-- timeline); NULL means when it was buffered (``created_at``). The flush reads
-- COALESCE(occurred_at, created_at) as the turn's time, and the memories it distils decay from it.
-- Same SQL for both dialects.
ALTER TABLE messages ADD COLUMN IF NOT EXISTS occurred_at timestamptz;
