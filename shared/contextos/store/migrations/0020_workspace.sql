-- dialect: postgres
-- 0020: what the markdown workspace (S10) needs for a faithful round trip and for edits.
-- The scope columns come from 0018; the revisions an edit keeps from 0018; this adds the foreign-id check.



-- Which of these ids another tenant holds: an imported file must not carry another tenant's
-- memory id. Row-level security hides other tenants, so this one answer runs as the owner and
-- says only yes or no per id (ids are random UUIDs: nothing to enumerate).
CREATE OR REPLACE FUNCTION memory_ids_of_other_tenants(ids uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
-- dialect: cockroach



CREATE OR REPLACE FUNCTION memory_ids_of_other_tenants(ids uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE AS $$
-- dialect: end
    SELECT DISTINCT m.id FROM memories m
    WHERE m.id = ANY(ids) AND m.tenant_id IS DISTINCT FROM current_setting('app.tenant_id', true)
$$;
-- dialect: postgres
REVOKE ALL ON FUNCTION memory_ids_of_other_tenants(uuid[]) FROM PUBLIC;
-- dialect: end
GRANT EXECUTE ON FUNCTION memory_ids_of_other_tenants(uuid[]) TO contextos_app;
