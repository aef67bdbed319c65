-- dialect: postgres
-- 0024 (PostgreSQL): what a document says stays searchable (S4, S6.6). A memory's source excerpts
-- (the passages of its sources beyond its definition, one array per occurrence) are kept with each
-- memory_item, and the memory carries their text (``source_text``: every occurrence's definition and
-- excerpts that are not its own definition, each once), so the full-text vector the BM25 search
-- ranks covers label, definition and source excerpts with their real term frequencies and length.
-- dialect: cockroach
-- 0024 (CockroachDB; as the PostgreSQL file, with its inverted index): source excerpts per
-- memory_item, their text on the memory, and the full-text vector over label, definition and them.
-- dialect: end
ALTER TABLE memory_items ADD COLUMN IF NOT EXISTS excerpts text[] NOT NULL DEFAULT '{}';
ALTER TABLE memories ADD COLUMN IF NOT EXISTS source_text text NOT NULL DEFAULT '';
-- dialect: postgres

-- A generated column's expression cannot be changed in place before PostgreSQL 17: drop and add
-- (its GIN index goes with it and is rebuilt).
ALTER TABLE memories DROP COLUMN IF EXISTS search_tsv;
ALTER TABLE memories ADD COLUMN search_tsv tsvector GENERATED ALWAYS AS
    (to_tsvector('english', label || ' ' || definition || ' ' || source_text)) STORED;
CREATE INDEX IF NOT EXISTS memories_search_tsv ON memories USING gin (search_tsv);
-- dialect: cockroach
DROP INDEX IF EXISTS memories@memories_search_tsv;
ALTER TABLE memories DROP COLUMN IF EXISTS search_tsv;
ALTER TABLE memories ADD COLUMN search_tsv tsvector AS
    (to_tsvector('english', label || ' ' || definition || ' ' || source_text)) STORED;
CREATE INVERTED INDEX IF NOT EXISTS memories_search_tsv ON memories (search_tsv);
-- dialect: end
