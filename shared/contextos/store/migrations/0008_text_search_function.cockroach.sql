-- 0008 (CockroachDB): no function; the store runs the text search inline (see repository.text_search).
SELECT 1;
