-- dialect: postgres
-- 0053: a memory's lexemes prefixed by its tenant, for a text index whose posting lists are
-- per tenant (0054 builds it). memories_search_tsv's posting list of a word holds every tenant's
-- rows: a tenant's lookup read them all and intersected them with its own rows' bitmap (measured at
-- 200k memories over 1,000 tenants: a 40k tenant's level scan 50-150 ms, most of it the other
-- tenants' postings and the tenant's 41k-row bitmap). pgserver ships no btree_gin, so the tenant
-- goes into the lexemes themselves: the first 8 hex digits of md5(tenant) before each lexeme (a
-- collision between two tenants only costs rows the tenant filter then drops). Immutable, as an
-- index expression must be: a versioned migration, not a repeatable definition.
CREATE OR REPLACE FUNCTION contextos_tenant_lexemes(tenant text, tsv tsvector) RETURNS tsvector
LANGUAGE sql IMMUTABLE PARALLEL SAFE
SET search_path = public, pg_temp
AS $fn$
    SELECT array_to_tsvector(ARRAY(SELECT left(md5(tenant), 8) || l FROM unnest(tsvector_to_array(tsv)) l))
$fn$;
-- dialect: cockroach
-- 0053 (CockroachDB): no BM25 functions (see 0016), so no tenant-prefixed lexemes.
SELECT 1;
-- dialect: end
