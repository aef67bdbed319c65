-- 0031: the read path matches a hit's source excerpts against the query word by word (S6.6's L2
-- tier). Their stemmed forms are computed once, when the occurrence is written (Snowball stems of
-- the content words, distinct, space-separated; one per excerpt, in the order of `excerpts`, and
-- one for the occurrence's own definition), so a query compares sets instead of stemming every
-- candidate's passages again. Rows written before it hold none: the read path stems those itself.
-- Same SQL for both dialects.
ALTER TABLE memory_items ADD COLUMN IF NOT EXISTS excerpt_stems text[] NOT NULL DEFAULT '{}';
ALTER TABLE memory_items ADD COLUMN IF NOT EXISTS definition_stems text;
