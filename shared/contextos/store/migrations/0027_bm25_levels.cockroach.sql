-- 0027 (CockroachDB): no plpgsql; the inline phrase search stands in for BM25 (see 0016).
SELECT 1;
