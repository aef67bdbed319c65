-- dialect: postgres
-- 0051 (PostgreSQL): drop the BM25 functions nothing calls any more: 0016's
-- contextos_text_search_bm25 (contextos_bm25_rank replaced it in 0027) and 0032's
-- contextos_bm25_scope_gather (contextos_bm25_scope_rank replaced it in 0035). The BM25 functions
-- in use are repeatable definitions (store/definitions/), applied after the migrations.
DROP FUNCTION IF EXISTS contextos_text_search_bm25(
    text, text[], real, integer, integer, real, real, integer, timestamptz, boolean);
DROP FUNCTION IF EXISTS contextos_bm25_scope_gather(text, text, timestamptz, text, text, text, text[], integer);
-- dialect: cockroach
-- 0051 (CockroachDB): no BM25 functions (see 0016).
SELECT 1;
-- dialect: end
