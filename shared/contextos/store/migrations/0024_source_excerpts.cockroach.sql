-- 0024 (CockroachDB; as the PostgreSQL file, with its inverted index): source excerpts per
-- memory_item, their text on the memory, and the full-text vector over label, definition and them.
ALTER TABLE memory_items ADD COLUMN IF NOT EXISTS excerpts text[] NOT NULL DEFAULT '{}';
ALTER TABLE memories ADD COLUMN IF NOT EXISTS source_text text NOT NULL DEFAULT '';
DROP INDEX IF EXISTS memories@memories_search_tsv;
ALTER TABLE memories DROP COLUMN IF EXISTS search_tsv;
ALTER TABLE memories ADD COLUMN search_tsv tsvector AS
    (to_tsvector('english', label || ' ' || definition || ' ' || source_text)) STORED;
CREATE INVERTED INDEX IF NOT EXISTS memories_search_tsv ON memories (search_tsv);
